import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Probing at scale (the write path):
 * - `resource_metrics.window_state`: the resource's rolling window (hourly buckets and the newest
 *   probe's facts, JSON), updated by each observation instead of rescanning the window. Null for
 *   rows written before: the recorder rebuilds it once from the raw observations;
 * - `observation_rollups`: one row per resource and hour, what history keeps once raw observations
 *   are pruned (`probes.rawRetentionHours`), until `probes.retentionDays`;
 * - `probe_schedule`: each resource's next due time and the lease of the instance that claimed it,
 *   so probes spread over the interval and instances on one Postgres share them.
 * Portable SQL (SQLite and Postgres).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resource_metrics ADD COLUMN window_state TEXT`
  // On SQLite the rows live in their primary key's tree (WITHOUT ROWID): a week of hours for 100k
  // resources is 17M small rows, and a second copy of every key in a separate index would be a third of it.
  const clustered = sql.onDialectOrElse({ sqlite: () => sql.literal("WITHOUT ROWID"), orElse: () => sql.literal("") })
  yield* sql`CREATE TABLE observation_rollups (
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    hour_ms BIGINT NOT NULL,
    probes INTEGER NOT NULL,
    answered INTEGER NOT NULL,
    healthy INTEGER NOT NULL,
    price_matches INTEGER NOT NULL,
    connect_failures INTEGER NOT NULL,
    first_healthy_ms BIGINT,
    latency_bins TEXT NOT NULL,
    PRIMARY KEY (resource_id, hour_ms)
  ) ${clustered}`
  yield* sql`CREATE INDEX observation_rollups_hour ON observation_rollups(hour_ms)`
  yield* sql`CREATE TABLE probe_schedule (
    resource_id TEXT PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
    due_ms BIGINT NOT NULL,
    lease_owner TEXT,
    lease_until_ms BIGINT NOT NULL DEFAULT 0
  )`
  yield* sql`CREATE INDEX probe_schedule_due ON probe_schedule(due_ms)`
})
