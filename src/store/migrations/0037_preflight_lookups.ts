import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Preflight reads the entries of a URL and of its origin on every payment a guarded client is
 * about to make (`ResourceReadsRepo.atUrl` / `atOrigin`). The URL has an index since the catalog's
 * first migration; the origin's only covered untrusted entries (the ingestion quotas'), so the
 * catalog file's own entries were a scan. `(origin, id)` also serves the read's order and limit.
 * Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX resources_origin_id ON resources(origin, id)`
})
