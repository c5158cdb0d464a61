import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { ServiceStatus } from "../domain/resources.js"
import type { MetricsSnapshot } from "../verification/metrics.js"

interface MetricsRow {
  readonly resource_id: string
  readonly availability: number
  readonly payment_interface_success_rate: number
  readonly transaction_success_rate: number
  readonly p50_latency_ms: number | null
  readonly p95_latency_ms: number | null
  readonly observed_price_usd: number | null
  readonly price_consistency: number
  readonly reliability: number
  readonly observation_count: number
  readonly last_verified: string | null
  readonly last_observed_at: string | null
  readonly valid_challenge_seen: number
  readonly transaction_verified: number
}

interface StandingRow extends Partial<MetricsRow> {
  readonly id: string
  readonly status: ServiceStatus
  readonly verification_level: number
}

/** A resource's stored status and level with its metrics row, null when it was never measured. */
export interface StoredStanding {
  readonly resourceId: string
  readonly status: ServiceStatus
  readonly level: number
  readonly snapshot: MetricsSnapshot | null
}

const num = (value: number | string | null) => (value === null ? null : Number(value))

const fromRow = (row: MetricsRow): MetricsSnapshot => ({
  resourceId: row.resource_id,
  availability24h: Number(row.availability),
  paymentInterfaceSuccessRate: Number(row.payment_interface_success_rate),
  transactionSuccessRate: Number(row.transaction_success_rate),
  p50LatencyMs: num(row.p50_latency_ms),
  p95LatencyMs: num(row.p95_latency_ms),
  observedPriceUsd: num(row.observed_price_usd),
  priceConsistency: Number(row.price_consistency),
  reliability: Number(row.reliability),
  observationCount: Number(row.observation_count),
  lastVerified: row.last_verified,
  lastObservedAt: row.last_observed_at,
  validChallengeSeen: Number(row.valid_challenge_seen) === 1,
  transactionVerified: Number(row.transaction_verified) === 1
})

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return {
    get: (resourceId: string) =>
      sql<MetricsRow>`SELECT * FROM resource_metrics WHERE resource_id = ${resourceId}`.pipe(
        Effect.map((rows) => (rows[0] ? fromRow(rows[0]) : null))
      ),

    upsert: (m: MetricsSnapshot, updatedAt: string) =>
      sql`INSERT INTO resource_metrics (resource_id, availability, payment_interface_success_rate, transaction_success_rate,
          p50_latency_ms, p95_latency_ms, observed_price_usd, price_consistency, reliability, observation_count,
          last_verified, last_observed_at, valid_challenge_seen, transaction_verified, updated_at)
        VALUES (${m.resourceId}, ${m.availability24h}, ${m.paymentInterfaceSuccessRate}, ${m.transactionSuccessRate},
          ${m.p50LatencyMs}, ${m.p95LatencyMs}, ${m.observedPriceUsd}, ${m.priceConsistency}, ${m.reliability},
          ${m.observationCount}, ${m.lastVerified}, ${m.lastObservedAt}, ${m.validChallengeSeen ? 1 : 0},
          ${m.transactionVerified ? 1 : 0}, ${updatedAt})
        ON CONFLICT (resource_id) DO UPDATE SET availability = excluded.availability,
          payment_interface_success_rate = excluded.payment_interface_success_rate,
          transaction_success_rate = excluded.transaction_success_rate, p50_latency_ms = excluded.p50_latency_ms,
          p95_latency_ms = excluded.p95_latency_ms, observed_price_usd = excluded.observed_price_usd,
          price_consistency = excluded.price_consistency, reliability = excluded.reliability,
          observation_count = excluded.observation_count, last_verified = excluded.last_verified,
          last_observed_at = excluded.last_observed_at, valid_challenge_seen = excluded.valid_challenge_seen,
          transaction_verified = excluded.transaction_verified, updated_at = excluded.updated_at`.pipe(Effect.asVoid),

    /** Status, level and metrics of many resources in one query; unknown ids are absent. */
    standings: (resourceIds: ReadonlyArray<string>) =>
      resourceIds.length === 0
        ? Effect.succeed([] as ReadonlyArray<StoredStanding>)
        : sql<StandingRow>`
            SELECT r.id, r.status, r.verification_level, m.*
            FROM resources r LEFT JOIN resource_metrics m ON m.resource_id = r.id
            WHERE ${sql.in("r.id", resourceIds)}`.pipe(
            Effect.map((rows) =>
              rows.map(
                (row): StoredStanding => ({
                  resourceId: row.id,
                  status: row.status,
                  level: Number(row.verification_level),
                  snapshot: row.resource_id ? fromRow(row as MetricsRow) : null
                })
              )
            )
          )
  }
})

export class MetricsRepo extends Context.Tag("sextant/MetricsRepo")<MetricsRepo, Effect.Effect.Success<typeof make>>() {
  static readonly Live = Layer.effect(MetricsRepo, make)
}
