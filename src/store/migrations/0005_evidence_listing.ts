import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Evidence no caller can forge:
 * - resources are listed or unlisted. Only listed ones appear in discovery, search and routes and
 *   count as payee evidence; every change of listing is stored with its actor and reason.
 *   Resources created by `/v1/validate` (source "discovered" before) become unlisted.
 * - economic events carry a state (pending / confirmed / rejected / failed) and what a confirming
 *   transaction must transfer. Events recorded before ledger confirmation existed are rejected:
 *   nothing checked them, so they stop counting.
 * - settlements keep the payment's Soroban authorisation (nonce, expiration ledger) so the
 *   reconciler can read the ledger for it, and every state change with its reason.
 * - economic probes keep what they spent per UTC day, so the daily budget survives a restart; a
 *   lock row serialises reservations across processes, as the settlement budgets' does.
 * Portable SQL (SQLite and Postgres); SQLite takes one column per ALTER TABLE.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN listed INTEGER NOT NULL DEFAULT 1`
  yield* sql`UPDATE resources SET source = 'config' WHERE source = 'catalog'`
  yield* sql`UPDATE resources SET source = 'validate', listed = 0 WHERE source = 'discovered'`
  yield* sql`CREATE INDEX resources_listed ON resources(listed, id)`
  yield* sql`CREATE TABLE listing_changes (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    listed INTEGER NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX listing_changes_resource_time ON listing_changes(resource_id, at_ms)`

  yield* sql`ALTER TABLE economic_events ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'`
  yield* sql`ALTER TABLE economic_events ADD COLUMN state_reason TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN state_changed_at TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN payer TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN expected_pay_to TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN expected_amount TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN expected_scheme TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN probe_json TEXT`
  yield* sql`ALTER TABLE economic_events ADD COLUMN ledger INTEGER`
  yield* sql`ALTER TABLE economic_events ADD COLUMN next_check_ms BIGINT`
  yield* sql`UPDATE economic_events SET state = 'rejected',
    state_reason = 'recorded before ledger confirmation existed; never checked against the ledger'`
  yield* sql`CREATE INDEX economic_events_state_check ON economic_events(state, next_check_ms)`

  yield* sql`ALTER TABLE settlements ADD COLUMN auth_nonce TEXT`
  yield* sql`ALTER TABLE settlements ADD COLUMN auth_expiration_ledger INTEGER`
  yield* sql`CREATE TABLE settlement_transitions (
    id TEXT PRIMARY KEY,
    settlement_id TEXT NOT NULL REFERENCES settlements(id) ON DELETE CASCADE,
    from_state TEXT,
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX settlement_transitions_settlement ON settlement_transitions(settlement_id, at_ms)`

  yield* sql`CREATE TABLE economic_probe_spend (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL,
    day TEXT NOT NULL,
    units BIGINT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX economic_probe_spend_day ON economic_probe_spend(day)`
  yield* sql`CREATE TABLE economic_probe_lock (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`
  yield* sql`INSERT INTO economic_probe_lock (id, version) VALUES (1, 0)`
})
