import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The settlement journal. A row is written `pending` before any backend is called and ends
 * `settled`, `failed` or `indeterminate`; it is never deleted, since it is what an operator
 * reconciles against the ledger. Each row also carries its reservations: the worst-case spend
 * (asset base units) and the sponsored fee charged at the ceiling (stroops), summed over the
 * rolling window by the budget checks. Portable SQL (SQLite and Postgres).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE settlements (
    id TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL UNIQUE,
    payment_hash TEXT NOT NULL UNIQUE,
    request_hash TEXT NOT NULL,
    state TEXT NOT NULL,
    principal TEXT NOT NULL,
    payer TEXT,
    network TEXT NOT NULL,
    scheme TEXT NOT NULL,
    asset TEXT NOT NULL,
    pay_to TEXT NOT NULL,
    amount TEXT NOT NULL,
    worst_case_units BIGINT NOT NULL,
    fee_stroops BIGINT NOT NULL,
    backend_id TEXT,
    transaction_hash TEXT,
    errors_json TEXT NOT NULL,
    answer_status INTEGER,
    answer_json TEXT,
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX settlements_created ON settlements(created_at_ms)`
  yield* sql`CREATE INDEX settlements_principal_created ON settlements(principal, created_at_ms)`
  yield* sql`CREATE INDEX settlements_state ON settlements(state)`
  // One row every reservation updates first: the row lock serialises reservations across
  // connections and processes (Postgres row lock, SQLite write lock), so budget sums never race.
  yield* sql`CREATE TABLE settlement_budget_lock (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`
  yield* sql`INSERT INTO settlement_budget_lock (id, version) VALUES (1, 0)`
})
