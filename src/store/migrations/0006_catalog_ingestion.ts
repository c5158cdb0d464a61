import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Ingestion and freshness:
 * - `listing_hold` says why an unlisted resource is unlisted, and so whether a healthy probe may
 *   list it: "awaiting_probe" (imported or extension-ingested, never probed healthy yet) and
 *   "unhealthy" (delisted after `verification.delistAfterHours` of unhealthy probes) may be listed
 *   by a probe; "operator", "source" (the importing source stopped listing it) and "validate" may
 *   not. NULL while listed. A column rather than a reading of `listing_changes.actor`: an operator's
 *   principal is free text and could be spelled "probe".
 * - `unhealthy_since_ms`: the first unhealthy probe since the last healthy one, NULL while healthy.
 * Existing unlisted rows were unlisted by `/v1/validate` or by hand, never by a rule.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN listing_hold TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN unhealthy_since_ms BIGINT`
  yield* sql`UPDATE resources SET listing_hold = CASE WHEN source = 'validate' THEN 'validate' ELSE 'operator' END
    WHERE listed = 0`
  yield* sql`CREATE INDEX resources_source ON resources(source, listed)`
})
