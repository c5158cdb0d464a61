import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Operator curation and payment-identifier:
 * - an operator quarantine lives on the resource row (who, why, when; null when none), so every
 *   re-derivation of the status from evidence reads it and keeps the resource QUARANTINED until an
 *   operator lifts it;
 * - `operator_actions` is the log of every curation an operator made (quarantine, unquarantine,
 *   list, unlist, delete) with its actor and reason. It has no foreign key: the record of a delete
 *   outlives the row it removed;
 * - `verify_answers` caches `/x402/verify` answers by idempotency key (header or payment-identifier),
 *   scoped per principal, with the hash of the request they answered.
 * Portable SQL (SQLite and Postgres); SQLite takes one column per ALTER TABLE.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN quarantined_by TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN quarantine_reason TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN quarantined_at TEXT`
  yield* sql`CREATE TABLE operator_actions (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL,
    action TEXT NOT NULL,
    actor TEXT NOT NULL,
    reason TEXT NOT NULL,
    detail_json TEXT,
    at TEXT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX operator_actions_resource_time ON operator_actions(resource_id, at_ms)`
  yield* sql`CREATE TABLE verify_answers (
    scoped_key TEXT PRIMARY KEY,
    request_hash TEXT NOT NULL,
    answer_json TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX verify_answers_created ON verify_answers(created_at_ms)`
})
