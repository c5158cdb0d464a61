import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The bazaar's service metadata of a resource (`domain/serviceMetadata.ts`): its service name,
 * topical tags (a JSON array of strings) and icon URL, null when the source gave none that
 * upstream's sanitiser keeps. Tags are also written into the search index's capability words, so
 * no index table changes. Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN service_name TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN tags TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN icon_url TEXT`
})
