import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import {
  type HourlyRollup,
  type Observation,
  ProbeOutcome,
  publicObservation,
  type RecordedObservation
} from "../domain/observations.js"
import { chunksOf, decodeRows, repository, SqlNumber } from "./repository.js"
import { isSortableId, timeCursor } from "./sortableId.js"

/** What ObservationsRepo offers. */
export interface ObservationsRepoShape {
  /** Stores a batch of observations, a few statements for the lot. */
  readonly insert: (batch: ReadonlyArray<RecordedObservation>) => Effect.Effect<void>
  /** Newest first; `cursor` from `observationCursor` returns only older observations. */
  readonly page: (
    resourceId: ResourceId,
    limit: number,
    cursor: string | null
  ) => Effect.Effect<{ readonly observations: Array<Observation>; readonly nextBefore: string | null }>
  /** One resource's observations taken at or after `sinceMs`: the metric window. */
  readonly window: (resourceId: ResourceId, sinceMs: number) => Effect.Effect<Array<RecordedObservation>>
  /** The newest healthy observation of each resource that has one: the challenge a buyer will meet. */
  readonly latestHealthy: (resourceIds: ReadonlyArray<string>) => Effect.Effect<Map<string, RecordedObservation>>
  /** Stores hours of resources' probes (an hour changed again replaces its row). */
  readonly upsertRollups: (
    rollups: ReadonlyArray<{ readonly resourceId: ResourceId; readonly rollup: HourlyRollup }>
  ) => Effect.Effect<void>
  /** A resource's stored hours starting at or after `fromMs` and before `toMs`, oldest first. */
  readonly rollups: (resourceId: ResourceId, fromMs: number, toMs: number) => Effect.Effect<Array<HourlyRollup>>
  /**
   * Retention, one small batch: deletes at most `limit` raw observations older than `beforeMs`
   * (oldest first) and says how many went. Callers loop, yielding between batches, so a large
   * backlog never holds the writer for long.
   */
  readonly pruneRaw: (beforeMs: number, limit: number) => Effect.Effect<number>
  /**
   * Retention of hourly rollups, one small batch: at most `limit` hours before `beforeMs` of the
   * `resources` resources after `afterId` (by id), found through the primary key. Answers where
   * the next batch starts: the same resources while they had more, null after the last resource.
   */
  readonly pruneRollups: (
    beforeMs: number,
    afterId: string,
    resources: number,
    limit: number
  ) => Effect.Effect<{ readonly deleted: number; readonly next: string | null }>
}

export class ObservationsRepo extends Context.Tag("sextant/ObservationsRepo")<
  ObservationsRepo,
  ObservationsRepoShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(ObservationsRepo, make))
}

const ObservationRow = Schema.Struct({
  id: Schema.String,
  resource_id: ResourceId,
  observed_at: Schema.String,
  method: Schema.String,
  url: Schema.String,
  http_status: Schema.NullOr(SqlNumber),
  latency_ms: Schema.NullOr(SqlNumber),
  outcome: ProbeOutcome,
  x402_version: Schema.NullOr(SqlNumber),
  scheme: Schema.NullOr(Schema.String),
  network: Schema.NullOr(Schema.String),
  asset: Schema.NullOr(Schema.String),
  pay_to: Schema.NullOr(Schema.String),
  amount: Schema.NullOr(Schema.String),
  max_amount: Schema.NullOr(Schema.String),
  price_usd: Schema.NullOr(SqlNumber),
  detail: Schema.NullOr(Schema.String),
  contradiction: Schema.NullOr(Schema.String)
})

const toObservation = (row: typeof ObservationRow.Type): RecordedObservation => ({
  id: row.id,
  resourceId: row.resource_id,
  observedAt: row.observed_at,
  method: row.method,
  url: row.url,
  httpStatus: row.http_status,
  latencyMs: row.latency_ms,
  outcome: row.outcome,
  x402Version: row.x402_version,
  scheme: row.scheme,
  network: row.network,
  asset: row.asset,
  payTo: row.pay_to,
  amount: row.amount,
  maxAmount: row.max_amount,
  priceUsd: row.price_usd,
  detail: row.detail,
  contradiction: row.contradiction
})

const RollupRow = Schema.Struct({
  hour_ms: SqlNumber,
  probes: SqlNumber,
  answered: SqlNumber,
  healthy: SqlNumber,
  price_matches: SqlNumber,
  connect_failures: SqlNumber,
  first_healthy_ms: Schema.NullOr(SqlNumber),
  latency_bins: Schema.parseJson(Schema.Array(Schema.Number))
})
const decodeRollups = decodeRows(RollupRow)

const decodeObservations = (rows: ReadonlyArray<unknown>) =>
  Effect.map(decodeRows(ObservationRow)(rows), (r) => r.map(toObservation))

/**
 * A `before` cursor: an observation id, or an ISO date-time meaning "older than this instant".
 * Null when it is neither.
 */
export const observationCursor = (before: string): string | null => {
  if (isSortableId("obs", before)) return before
  if (!/^\d{4}-\d{2}-\d{2}T/.test(before)) return null
  const ms = Date.parse(before)
  return Number.isNaN(ms) ? null : timeCursor("obs", ms)
}

/** Rows per multi-row INSERT: 19 parameters each stays far below SQLite's and Postgres's limits. */
const ROWS_PER_STATEMENT = 256

const observationRow = (o: RecordedObservation) => ({
  id: o.id,
  resource_id: o.resourceId,
  observed_at: o.observedAt,
  observed_at_ms: Date.parse(o.observedAt),
  method: o.method,
  url: o.url,
  http_status: o.httpStatus,
  latency_ms: o.latencyMs,
  outcome: o.outcome,
  x402_version: o.x402Version,
  scheme: o.scheme,
  network: o.network,
  asset: o.asset,
  pay_to: o.payTo,
  amount: o.amount,
  max_amount: o.maxAmount,
  price_usd: o.priceUsd,
  detail: o.detail,
  contradiction: o.contradiction
})

export interface ObservationPage {
  readonly observations: ReadonlyArray<Observation>
  readonly nextBefore: string | null
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return repository("ObservationsRepo", {
    insert: (batch: ReadonlyArray<RecordedObservation>) =>
      Effect.forEach(
        chunksOf(batch, ROWS_PER_STATEMENT),
        (part) => sql`INSERT INTO observations ${sql.insert(part.map(observationRow))}`,
        { discard: true }
      ),

    page: (resourceId: ResourceId, limit: number, cursor: string | null) =>
      Effect.gen(function* () {
        const rows = yield* sql`
          SELECT * FROM observations
          WHERE resource_id = ${resourceId} ${cursor === null ? sql`` : sql`AND id < ${cursor}`}
          ORDER BY id DESC
          LIMIT ${limit + 1}`.pipe(Effect.flatMap(decodeObservations))
        const observations = rows.slice(0, limit).map(publicObservation)
        const last = observations[observations.length - 1]
        return { observations, nextBefore: rows.length > limit && last ? last.id : null } satisfies ObservationPage
      }),

    window: (resourceId: ResourceId, sinceMs: number) =>
      sql`
        SELECT * FROM observations WHERE resource_id = ${resourceId} AND observed_at_ms >= ${sinceMs}
        ORDER BY observed_at_ms, id`.pipe(Effect.flatMap(decodeObservations)),

    latestHealthy: (resourceIds: ReadonlyArray<string>) =>
      resourceIds.length === 0
        ? Effect.succeed(new Map<string, RecordedObservation>())
        : sql`
            SELECT o.* FROM observations o
            WHERE ${sql.in("o.resource_id", resourceIds)} AND o.outcome = 'healthy'
              AND o.id = (SELECT MAX(l.id) FROM observations l WHERE l.resource_id = o.resource_id AND l.outcome = 'healthy')`.pipe(
            Effect.flatMap(decodeObservations),
            Effect.map((rows) => new Map(rows.map((o) => [o.resourceId, o] as const)))
          ),

    upsertRollups: (rollups: ReadonlyArray<{ readonly resourceId: ResourceId; readonly rollup: HourlyRollup }>) =>
      Effect.forEach(
        chunksOf(rollups, ROWS_PER_STATEMENT),
        (part) =>
          sql`INSERT INTO observation_rollups ${sql.insert(
            part.map(({ resourceId, rollup: r }) => ({
              resource_id: resourceId,
              hour_ms: r.startMs,
              probes: r.probes,
              answered: r.answered,
              healthy: r.healthy,
              price_matches: r.priceMatches,
              connect_failures: r.connectFailures,
              first_healthy_ms: r.firstHealthyMs,
              latency_bins: JSON.stringify(r.latency)
            }))
          )}
            ON CONFLICT (resource_id, hour_ms) DO UPDATE SET probes = excluded.probes, answered = excluded.answered,
              healthy = excluded.healthy, price_matches = excluded.price_matches,
              connect_failures = excluded.connect_failures, first_healthy_ms = excluded.first_healthy_ms,
              latency_bins = excluded.latency_bins`,
        { discard: true }
      ),

    rollups: (resourceId: ResourceId, fromMs: number, toMs: number) =>
      sql`SELECT hour_ms, probes, answered, healthy, price_matches, connect_failures, first_healthy_ms, latency_bins
        FROM observation_rollups WHERE resource_id = ${resourceId} AND hour_ms >= ${fromMs} AND hour_ms < ${toMs}
        ORDER BY hour_ms`.pipe(
        Effect.flatMap(decodeRollups),
        Effect.map((rows) =>
          rows.map(
            (r): HourlyRollup => ({
              startMs: r.hour_ms,
              probes: r.probes,
              answered: r.answered,
              healthy: r.healthy,
              priceMatches: r.price_matches,
              connectFailures: r.connect_failures,
              firstHealthyMs: r.first_healthy_ms,
              latency: r.latency_bins
            })
          )
        )
      ),

    pruneRaw: (beforeMs: number, limit: number) =>
      sql<{ id: string }>`DELETE FROM observations WHERE id IN (
          SELECT id FROM observations WHERE observed_at_ms < ${beforeMs} ORDER BY observed_at_ms LIMIT ${limit})
        RETURNING id`.pipe(Effect.map((rows) => rows.length)),

    pruneRollups: (beforeMs: number, afterId: string, resources: number, limit: number) =>
      Effect.gen(function* () {
        const ids = (yield* sql<{
          id: string
        }>`SELECT id FROM resources WHERE id > ${afterId} ORDER BY id LIMIT ${resources}`).map((r) => r.id)
        if (ids.length === 0) return { deleted: 0, next: null }
        const deleted = (yield* sql<{
          hour_ms: unknown
        }>`DELETE FROM observation_rollups WHERE (resource_id, hour_ms) IN (
            SELECT resource_id, hour_ms FROM observation_rollups WHERE ${sql.in("resource_id", ids)} AND hour_ms < ${beforeMs} LIMIT ${limit})
          RETURNING hour_ms`).length
        const next = deleted === limit ? afterId : ids.length < resources ? null : ids[ids.length - 1]!
        return { deleted, next }
      })
  })
})
