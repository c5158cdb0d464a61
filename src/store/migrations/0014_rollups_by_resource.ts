import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Hourly rollups lose their index by hour: at 100k resources and a week of hours it was a large
 * share of the store (docs/performance.md has the disk budget). Retention now deletes old hours resource by
 * resource through the primary key (resource_id, hour_ms), which needs no second copy of the keys.
 * Portable SQL (SQLite and Postgres).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`DROP INDEX observation_rollups_hour`
})
