import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Request rate limits: one row per principal and endpoint group, holding the count of
 * the current window and when the window ends. Kept in the store so every instance on one
 * Postgres database counts against the same row; expired rows are deleted from time to time.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE rate_limits (
    key TEXT PRIMARY KEY,
    count BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX rate_limits_expires ON rate_limits(expires_at_ms)`
})
