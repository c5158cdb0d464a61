import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import type { MetricsSnapshot, StoredStanding } from "../domain/metrics.js"
import { ServiceStatus } from "../domain/resources.js"
import { CatalogChanges, resourcesChanged } from "./CatalogChanges.js"
import { chunksOf, decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"

/** What MetricsRepo offers. */
export interface MetricsRepoShape {
  readonly get: (resourceId: ResourceId) => Effect.Effect<MetricsSnapshot | null>
  /** Stores metrics rows, each with the rolling window (rollingWindow.ts, encoded) it was derived from. */
  readonly upsert: (
    rows: ReadonlyArray<{ readonly metrics: MetricsSnapshot; readonly windowState: string }>,
    updatedAt: string
  ) => Effect.Effect<void>
  /** The stored rolling windows of many resources (null: never stored, or rows from before it existed). */
  readonly windowStates: (resourceIds: ReadonlyArray<string>) => Effect.Effect<Map<string, string | null>>
  readonly payeeShortlist: (
    payTo: string,
    query: PayeeShortlistQuery
  ) => Effect.Effect<
    Array<{
      readonly providerId: string
      readonly url: string
      readonly trusted: boolean
      readonly standing: StoredStanding
    }>
  >
  /** Status, level and metrics of many resources in one query; unknown ids are absent. */
  readonly standings: (resourceIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<StoredStanding>>
}

export class MetricsRepo extends Context.Tag("sextant/MetricsRepo")<MetricsRepo, MetricsRepoShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(MetricsRepo, make))
}

export const MetricsColumns = {
  resource_id: ResourceId,
  availability: SqlNumber,
  payment_interface_success_rate: SqlNumber,
  transaction_success_rate: SqlNumber,
  p50_latency_ms: Schema.NullOr(SqlNumber),
  p95_latency_ms: Schema.NullOr(SqlNumber),
  observed_price_usd: Schema.NullOr(SqlNumber),
  price_consistency: SqlNumber,
  reliability: SqlNumber,
  observation_count: SqlNumber,
  last_verified: Schema.NullOr(Schema.String),
  last_observed_at: Schema.NullOr(Schema.String),
  valid_challenge_seen: SqlFlag,
  transaction_verified: SqlFlag
}
export const MetricsRow = Schema.Struct(MetricsColumns)

/** A resource's status and level, LEFT JOINed with its metrics row: the row, or nulls when it was never measured. */
const standingColumns = {
  id: ResourceId,
  status: ServiceStatus,
  verification_level: SqlNumber,
  quarantined_by: Schema.NullOr(Schema.String),
  quarantine_reason: Schema.NullOr(Schema.String),
  quarantined_at: Schema.NullOr(Schema.String)
}
const StandingRow = Schema.Union(
  Schema.Struct({ ...standingColumns, ...MetricsColumns }),
  Schema.Struct({ ...standingColumns, resource_id: Schema.Null })
)

export const toSnapshot = (row: typeof MetricsRow.Type): MetricsSnapshot => ({
  resourceId: row.resource_id,
  availability24h: row.availability,
  paymentInterfaceSuccessRate: row.payment_interface_success_rate,
  transactionSuccessRate: row.transaction_success_rate,
  p50LatencyMs: row.p50_latency_ms,
  p95LatencyMs: row.p95_latency_ms,
  observedPriceUsd: row.observed_price_usd,
  priceConsistency: row.price_consistency,
  reliability: row.reliability,
  observationCount: row.observation_count,
  lastVerified: row.last_verified,
  lastObservedAt: row.last_observed_at,
  validChallengeSeen: row.valid_challenge_seen,
  transactionVerified: row.transaction_verified
})

const decodeMetrics = decodeRows(MetricsRow)
const decodeStanding = decodeRows(StandingRow)
const WindowRow = Schema.Struct({ resource_id: ResourceId, window_state: Schema.NullOr(Schema.String) })
const decodeWindows = decodeRows(WindowRow)

/** The metric columns by name: reads leave out `window_state`, the writer's working state. */
const metricColumns = Object.keys(MetricsColumns)
  .map((c) => `m.${c}`)
  .join(", ")

const toStanding = (row: typeof StandingRow.Type): StoredStanding => ({
  resourceId: row.id,
  status: row.status,
  level: row.verification_level,
  snapshot: row.resource_id === null ? null : toSnapshot(row),
  operatorQuarantine:
    row.quarantined_by === null
      ? null
      : { actor: row.quarantined_by, reason: row.quarantine_reason ?? "", at: row.quarantined_at ?? "" }
})

/** What a payee shortlist reads besides the payee (see payeeShortlist). */
export interface PayeeShortlistQuery {
  readonly limit: number
  readonly deniedProviders: ReadonlyArray<string>
  readonly observedSince: string
  /** The URL the payment names (`paymentPayload.resource.url`), when it names one. */
  readonly paidUrl?: string | undefined
  /** Only trusted resources can pass (`ingestion.untrustedPayeeStanding` off): the passing parts read those alone. */
  readonly trustedOnly?: boolean
}

const ShortlistRow = Schema.extend(
  Schema.Struct({ provider_id: Schema.String, url: Schema.String, trusted: SqlFlag }),
  StandingRow
)
const decodeShortlist = decodeRows(ShortlistRow)

/**
 * A few of the resources that are evidence about a payee (the listed ones paying it and any an
 * operator quarantined), with their provider, URL, trust and standing, in one query whose cost
 * does not grow with how many resources pay it (see Settlement.checkPayee). It mirrors
 * settlement/rules.ts (payeeDenial, blocksPayee, judgedCandidates): keep both in step; a property
 * test (test/payeeShortlist.property.test.ts) holds that it never passes what the rule refuses.
 * - one quarantine that refuses the payee, if any does: an operator's, or a trusted resource's
 *   (blocksPayee), read from the quarantined side (a partial index; quarantine is rare);
 * - one resource of a provider in `deniedProviders`, if any pays the payee (only when some
 *   policy denies providers): the payee's resources are walked until one is found;
 * - when the payment names a URL: one resource at that URL paying the payee, whatever its state,
 *   a trusted one first (so both judgements, over all and over the trusted alone, judge the named
 *   ones exactly when judgedCandidates does over the whole set), and the first `limit` of them
 *   that could pass;
 * - the first `limit` that could pass a policy, in id order: not offline or quarantined, a valid
 *   challenge seen, observed since `observedSince` (ISO 8601, as stored), trusted when
 *   `trustedOnly` (payeeDenial's `untrustedStanding` off). Which ones is only a
 *   heuristic: a payee whose passing resources are all beyond them is judged on the whole set.
 */
const payeeShortlist = (
  sql: SqlClient.SqlClient,
  payTo: string,
  { limit, deniedProviders, observedSince, paidUrl, trustedOnly = false }: PayeeShortlistQuery
) => {
  const evidence = (r: string) => sql.literal(`(${r}.listed = 1 OR ${r}.quarantined_by IS NOT NULL)`)
  const paying = (r: string) =>
    sql`${sql.literal(r)}.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`
  // At a URL only a few resources: probing the payee's options per row beats listing all of them.
  const payingEach = (r: string) => {
    const option = sql.literal(`${r}_option`)
    return sql`EXISTS (SELECT 1 FROM payment_options ${option} WHERE ${option}.pay_to = ${payTo} AND ${option}.resource_id = ${sql.literal(r)}.id)`
  }
  const couldPass = (r: string) =>
    sql`${sql.literal(r)}.status NOT IN ('OFFLINE', 'QUARANTINED') AND ${sql.literal(r)}m.valid_challenge_seen = 1
      AND ${sql.literal(r)}m.last_observed_at >= ${observedSince}${trustedOnly ? sql.literal(` AND ${r}.trusted = 1`) : sql``}`
  // Each part is a subquery of its own, so each LIMIT binds that part rather than the UNION.
  const quarantined = sql`SELECT id FROM (
      SELECT q.id FROM resources q
      WHERE q.status = 'QUARANTINED' AND (q.quarantined_by IS NOT NULL OR (q.listed = 1 AND q.trusted = 1))
        AND EXISTS (SELECT 1 FROM payment_options qo WHERE qo.pay_to = ${payTo} AND qo.resource_id = q.id)
      LIMIT 1) quarantined`
  const denied =
    deniedProviders.length === 0
      ? sql``
      : sql`UNION SELECT id FROM (
        SELECT d.id FROM resources d WHERE ${evidence("d")} AND ${sql.in("d.provider_id", deniedProviders)} AND ${paying("d")}
        LIMIT 1) denied`
  const named =
    paidUrl === undefined
      ? sql``
      : sql`UNION SELECT id FROM (
        SELECT n.id FROM resources n WHERE n.url = ${paidUrl} AND ${evidence("n")} AND ${payingEach("n")}
        ORDER BY n.trusted DESC, n.id LIMIT 1) named
      UNION SELECT id FROM (
        SELECT p.id FROM resources p JOIN resource_metrics pm ON pm.resource_id = p.id
        WHERE p.url = ${paidUrl} AND ${evidence("p")} AND ${payingEach("p")} AND ${couldPass("p")}
        ORDER BY p.id LIMIT ${limit}) named_passing`
  return sql`
    SELECT r.provider_id, r.url, r.trusted, r.id, r.status, r.verification_level, r.quarantined_by, r.quarantine_reason, r.quarantined_at,
      ${sql.literal(metricColumns)}
    FROM resources r LEFT JOIN resource_metrics m ON m.resource_id = r.id
    WHERE r.id IN (
      ${quarantined}
      ${denied}
      ${named}
      UNION SELECT id FROM (
        SELECT c.id FROM payment_options co
          JOIN resources c ON c.id = co.resource_id
          JOIN resource_metrics cm ON cm.resource_id = c.id
        WHERE co.pay_to = ${payTo} AND ${evidence("c")} AND ${couldPass("c")}
        ORDER BY co.resource_id LIMIT ${limit}) passing
    )`.pipe(
    Effect.flatMap(decodeShortlist),
    Effect.map((rows) =>
      rows.map((row) => ({
        providerId: row.provider_id,
        url: row.url,
        trusted: row.trusted,
        standing: toStanding(row)
      }))
    )
  )
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* CatalogChanges
  return repository("MetricsRepo", {
    get: (resourceId: ResourceId) =>
      sql`SELECT * FROM resource_metrics WHERE resource_id = ${resourceId}`.pipe(
        Effect.flatMap(decodeMetrics),
        Effect.map((rows) => (rows[0] ? toSnapshot(rows[0]) : null))
      ),

    upsert: (
      rows: ReadonlyArray<{ readonly metrics: MetricsSnapshot; readonly windowState: string }>,
      updatedAt: string
    ) =>
      Effect.forEach(
        chunksOf(rows, 256),
        (part) =>
          sql`INSERT INTO resource_metrics ${sql.insert(
            part.map(({ metrics: m, windowState }) => ({
              resource_id: m.resourceId,
              availability: m.availability24h,
              payment_interface_success_rate: m.paymentInterfaceSuccessRate,
              transaction_success_rate: m.transactionSuccessRate,
              p50_latency_ms: m.p50LatencyMs,
              p95_latency_ms: m.p95LatencyMs,
              observed_price_usd: m.observedPriceUsd,
              price_consistency: m.priceConsistency,
              reliability: m.reliability,
              observation_count: m.observationCount,
              last_verified: m.lastVerified,
              last_observed_at: m.lastObservedAt,
              valid_challenge_seen: m.validChallengeSeen ? 1 : 0,
              transaction_verified: m.transactionVerified ? 1 : 0,
              window_state: windowState,
              updated_at: updatedAt
            }))
          )}
          ON CONFLICT (resource_id) DO UPDATE SET availability = excluded.availability,
            payment_interface_success_rate = excluded.payment_interface_success_rate,
            transaction_success_rate = excluded.transaction_success_rate, p50_latency_ms = excluded.p50_latency_ms,
            p95_latency_ms = excluded.p95_latency_ms, observed_price_usd = excluded.observed_price_usd,
            price_consistency = excluded.price_consistency, reliability = excluded.reliability,
            observation_count = excluded.observation_count, last_verified = excluded.last_verified,
            last_observed_at = excluded.last_observed_at, valid_challenge_seen = excluded.valid_challenge_seen,
            transaction_verified = excluded.transaction_verified, window_state = excluded.window_state,
            updated_at = excluded.updated_at`,
        { discard: true }
      ).pipe(Effect.zipRight(changes.changed(resourcesChanged(rows.map((r) => r.metrics.resourceId))))),

    windowStates: (resourceIds: ReadonlyArray<string>) =>
      resourceIds.length === 0
        ? Effect.succeed(new Map<string, string | null>())
        : sql`SELECT resource_id, window_state FROM resource_metrics WHERE ${sql.in("resource_id", resourceIds)}`.pipe(
            Effect.flatMap(decodeWindows),
            Effect.map((rows) => new Map(rows.map((r) => [r.resource_id, r.window_state] as const)))
          ),

    payeeShortlist: (payTo: string, query: PayeeShortlistQuery) => payeeShortlist(sql, payTo, query),

    standings: (resourceIds: ReadonlyArray<string>) =>
      resourceIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<StoredStanding>)
        : sql`
            SELECT r.id, r.status, r.verification_level, r.quarantined_by, r.quarantine_reason, r.quarantined_at,
              ${sql.literal(metricColumns)}
            FROM resources r LEFT JOIN resource_metrics m ON m.resource_id = r.id
            WHERE ${sql.in("r.id", resourceIds)}`.pipe(
            Effect.flatMap(decodeStanding),
            Effect.map((rows) => rows.map(toStanding))
          )
  })
})
