import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Start-up proportional to what changed: the key of the catalog file content the last
 * completed catalog load wrote (at most one row, `name = 'config'`), and how many entries it held.
 * A start whose file has the same key reads nothing more of it: no decode, no diff. The row is
 * written in the load's own transaction, so a load that did not commit never leaves one.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE catalog_loads (
    name TEXT PRIMARY KEY,
    content_key TEXT NOT NULL,
    entries BIGINT NOT NULL,
    loaded_at TEXT NOT NULL
  )`
})
