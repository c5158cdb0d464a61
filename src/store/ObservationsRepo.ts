import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { Observation, ProbeOutcome } from "../domain/observations.js"
import { publicObservation, type RecordedObservation } from "../verification/windowStats.js"
import { isSortableId, timeCursor } from "./sortableId.js"

interface ObservationRow {
  readonly id: string
  readonly resource_id: string
  readonly observed_at: string
  readonly method: string
  readonly url: string
  readonly http_status: number | null
  readonly latency_ms: number | null
  readonly outcome: ProbeOutcome
  readonly x402_version: number | null
  readonly scheme: string | null
  readonly network: string | null
  readonly asset: string | null
  readonly pay_to: string | null
  readonly amount: string | null
  readonly max_amount: string | null
  readonly price_usd: number | null
  readonly detail: string | null
  readonly contradiction: string | null
}

const nullableNumber = (value: number | string | null) => (value === null ? null : Number(value))

const fromRow = (row: ObservationRow): RecordedObservation => ({
  id: row.id,
  resourceId: row.resource_id,
  observedAt: row.observed_at,
  method: row.method,
  url: row.url,
  httpStatus: nullableNumber(row.http_status),
  latencyMs: nullableNumber(row.latency_ms),
  outcome: row.outcome,
  x402Version: nullableNumber(row.x402_version),
  scheme: row.scheme,
  network: row.network,
  asset: row.asset,
  payTo: row.pay_to,
  amount: row.amount,
  maxAmount: row.max_amount,
  priceUsd: nullableNumber(row.price_usd),
  detail: row.detail,
  contradiction: row.contradiction
})

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

export interface ObservationPage {
  readonly observations: ReadonlyArray<Observation>
  readonly nextBefore: string | null
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return {
    insert: (o: RecordedObservation) =>
      sql`INSERT INTO observations (id, resource_id, observed_at, observed_at_ms, method, url, http_status, latency_ms,
          outcome, x402_version, scheme, network, asset, pay_to, amount, max_amount, price_usd, detail, contradiction)
        VALUES (${o.id}, ${o.resourceId}, ${o.observedAt}, ${Date.parse(o.observedAt)}, ${o.method}, ${o.url},
          ${o.httpStatus}, ${o.latencyMs}, ${o.outcome}, ${o.x402Version}, ${o.scheme}, ${o.network}, ${o.asset},
          ${o.payTo}, ${o.amount}, ${o.maxAmount}, ${o.priceUsd}, ${o.detail}, ${o.contradiction})`.pipe(Effect.asVoid),

    /** Newest first; `cursor` from `observationCursor` returns only older observations. */
    page: (resourceId: string, limit: number, cursor: string | null) =>
      Effect.gen(function* () {
        const rows = yield* sql<ObservationRow>`
          SELECT * FROM observations
          WHERE resource_id = ${resourceId} ${cursor === null ? sql`` : sql`AND id < ${cursor}`}
          ORDER BY id DESC
          LIMIT ${limit + 1}`
        const observations = rows.slice(0, limit).map((row) => publicObservation(fromRow(row)))
        const last = observations[observations.length - 1]
        return { observations, nextBefore: rows.length > limit && last ? last.id : null } satisfies ObservationPage
      }),

    /** One resource's observations taken at or after `sinceMs`: the metric window. */
    window: (resourceId: string, sinceMs: number) =>
      sql<ObservationRow>`
        SELECT * FROM observations WHERE resource_id = ${resourceId} AND observed_at_ms >= ${sinceMs}
        ORDER BY observed_at_ms, id`.pipe(Effect.map((rows) => rows.map(fromRow))),

    /** Retention: deletes observations older than `beforeMs` and says how many went. */
    pruneOlderThan: (beforeMs: number) =>
      sql<{ id: string }>`DELETE FROM observations WHERE observed_at_ms < ${beforeMs} RETURNING id`.pipe(
        Effect.map((rows) => rows.length)
      )
  }
})

export class ObservationsRepo extends Context.Tag("sextant/ObservationsRepo")<
  ObservationsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(ObservationsRepo, make)
}
