import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The trust model (docs/trust.md):
 * - `resources.trusted`: the entry comes from the catalog file or an operator listed it. Only a
 *   trusted entry's automatic quarantine refuses its payee; others' stay their own
 *   (settlement/rules.ts, MetricsRepo.payeeShortlist). Rows an operator listed before this column
 *   existed are taken as trusted when still listed;
 * - `resources.origin` and `resources.added_by`: what ingestion quotas count by (per origin, per
 *   principal). Existing rows get their origin here; who added them is not known (NULL);
 * - `probe_schedule.lane`: 1 for trusted entries, which a lane of their own probes, so strangers'
 *   targets never delay them.
 * Portable SQL (SQLite and Postgres); SQLite takes one column per ALTER TABLE.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN trusted INTEGER NOT NULL DEFAULT 0`
  yield* sql`ALTER TABLE resources ADD COLUMN origin TEXT`
  yield* sql`ALTER TABLE resources ADD COLUMN added_by TEXT`
  yield* sql`UPDATE resources SET trusted = 1 WHERE source = 'config'
    OR (listed = 1 AND id IN (SELECT resource_id FROM operator_actions WHERE action = 'list'))`
  const rows = yield* sql<{ id: string; url: string }>`SELECT id, url FROM resources`
  for (const { id, url } of rows) {
    const origin = URL.canParse(url) ? new URL(url).origin : null
    yield* sql`UPDATE resources SET origin = ${origin} WHERE id = ${id}`
  }
  yield* sql`CREATE INDEX resources_origin ON resources(origin) WHERE trusted = 0`
  yield* sql`CREATE INDEX resources_added_by ON resources(added_by) WHERE trusted = 0`
  yield* sql`CREATE INDEX resources_open_source ON resources(source) WHERE trusted = 0`
  yield* sql`ALTER TABLE probe_schedule ADD COLUMN lane INTEGER NOT NULL DEFAULT 0`
  yield* sql`UPDATE probe_schedule SET lane = 1 WHERE resource_id IN (SELECT id FROM resources WHERE trusted = 1)`
  yield* sql`CREATE INDEX probe_schedule_lane_due ON probe_schedule(lane, due_ms)`
})
