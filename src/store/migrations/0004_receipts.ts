import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Signed receipts, kept exactly as issued: `receipt` is the JSON the buyer received, so a stored
 * receipt re-verifies byte for byte. The other columns are for lookups. Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE receipts (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL,
    transaction_hash TEXT,
    signature_algorithm TEXT NOT NULL,
    created_at TEXT NOT NULL,
    receipt TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX receipts_resource_id ON receipts(resource_id)`
  yield* sql`CREATE INDEX receipts_transaction_hash ON receipts(transaction_hash)`
})
