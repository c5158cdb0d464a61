import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { ServiceStatus } from "../domain/resources.js"
import { decodeRows, repository, SqlNumber } from "./repository.js"

/** What CatalogTableRepo offers. */
export interface CatalogTableRepoShape {
  /** One page of the listed catalog, filtered and ordered by the store, with the total matching the filters. */
  readonly page: (query: TableQuery) => Effect.Effect<{ readonly total: number; readonly rows: Array<TableRow> }>
  /** Capabilities of listed resources, for the table's filter. */
  readonly capabilities: () => Effect.Effect<Array<string>>
  /** Listed resources by status and level: the catalog-size gauge. */
  readonly counts: () => Effect.Effect<
    Array<{ readonly status: ServiceStatus; readonly level: number; readonly count: number }>
  >
}

export class CatalogTableRepo extends Context.Tag("sextant/CatalogTableRepo")<
  CatalogTableRepo,
  CatalogTableRepoShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(CatalogTableRepo, make))
}

/** Columns the status page's catalog table sorts by. */
export const TableSort = Schema.Literal(
  "provider",
  "resource",
  "capability",
  "price",
  "status",
  "level",
  "availability",
  "p95",
  "confidence",
  "lastVerified"
)
export type TableSort = typeof TableSort.Type

/** The time-dependent parts of the metrics, so the store can order by them as `currentMetrics` reads them. */
export interface TableClock {
  readonly nowMs: number
  readonly windowMs: number
  readonly sampleScale: number
  readonly halfLifeMs: number
}

export interface TableQuery {
  readonly capability?: string | undefined
  readonly status?: ServiceStatus | undefined
  readonly sort: TableSort
  readonly descending: boolean
  readonly offset: number
  readonly limit: number
  readonly clock: TableClock
}

/** One row of the table as the store holds it; current metrics come from the evidence reader. */
export interface TableRow {
  readonly id: ResourceId
  readonly name: string
  readonly providerName: string
  readonly capabilities: ReadonlyArray<string>
  /** Largest worst-case price of its options (an `upto` ceiling counts), USD; null without options. */
  readonly priceUsd: number | null
  readonly status: ServiceStatus
  readonly level: number
}

const PageRow = Schema.Struct({
  id: ResourceId,
  name: Schema.String,
  provider_name: Schema.String,
  price_usd: Schema.NullOr(SqlNumber),
  status: ServiceStatus,
  verification_level: SqlNumber
})
const CapabilityRow = Schema.Struct({ resource_id: ResourceId, capability: Schema.String })
const CountRow = Schema.Struct({ status: ServiceStatus, verification_level: SqlNumber, n: SqlNumber })
const decodePage = decodeRows(PageRow)
const decodeCapabilities = decodeRows(CapabilityRow)
const decodeCounts = decodeRows(CountRow)

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** Epoch ms of the newest probe, from its stored ISO text, in each dialect. */
  const lastObservedMs = sql.onDialectOrElse({
    pg: () => sql`EXTRACT(EPOCH FROM CAST(m.last_observed_at AS TIMESTAMPTZ)) * 1000`,
    orElse: () => sql`(julianday(m.last_observed_at) - 2440587.5) * 86400000.0`
  })

  /**
   * Sort keys. Availability and p95 read as empty once the newest probe has left the window, and
   * confidence is `confidence()` of verification/metrics.ts in SQL (sample term times freshness
   * halving every half-life, 0 outside the window): the table must order rows as it shows them,
   * and 100k rows are ordered by the store, not in memory. test/status.test.ts checks the two agree.
   */
  const sortKeys: Record<TableSort, Statement.Fragment> = {
    provider: sql`provider_name`,
    resource: sql`name`,
    capability: sql`capability`,
    price: sql`price_usd`,
    status: sql`status`,
    level: sql`verification_level`,
    availability: sql`CASE WHEN fresh = 1 THEN availability END`,
    p95: sql`CASE WHEN fresh = 1 THEN p95_latency_ms END`,
    confidence: sql`CASE WHEN fresh = 1 AND observation_count > 0
      THEN (1 - exp(-1.0 * observation_count / sample_scale)) * power(0.5, CASE WHEN age_ms > 0 THEN age_ms ELSE 0 END / half_life_ms)
      ELSE 0 END`,
    lastVerified: sql`last_verified`
  }

  const filters = (query: Pick<TableQuery, "capability" | "status">) =>
    sql.and([
      sql`r.listed = 1`,
      ...(query.status !== undefined ? [sql`r.status = ${query.status}`] : []),
      ...(query.capability !== undefined
        ? [sql`r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${query.capability})`]
        : [])
    ])

  const page = (query: TableQuery) =>
    Effect.gen(function* () {
      const where = filters(query)
      // Numbers the service computed itself, inlined so Postgres need not infer a parameter's type in SELECT.
      const [nowMs, windowMs, sampleScale, halfLifeMs] = [
        query.clock.nowMs,
        query.clock.windowMs,
        query.clock.sampleScale,
        query.clock.halfLifeMs
      ].map((n) => sql.literal(String(Math.trunc(Number(n)))))
      const direction = query.descending ? sql`DESC` : sql`ASC`
      const rows = yield* sql`
        WITH t AS (
          SELECT r.id, r.name, p.name AS provider_name, r.status, r.verification_level,
            (SELECT MIN(c.capability) FROM resource_capabilities c WHERE c.resource_id = r.id) AS capability,
            (SELECT MAX(CASE WHEN o.scheme = 'upto' THEN COALESCE(o.max_amount_usd, o.amount_usd) ELSE o.amount_usd END)
               FROM payment_options o WHERE o.resource_id = r.id) AS price_usd,
            m.availability, m.p95_latency_ms, m.observation_count, m.last_verified,
            ${nowMs} - ${lastObservedMs} AS age_ms,
            CASE WHEN m.last_observed_at IS NOT NULL AND ${nowMs} - ${lastObservedMs} <= ${windowMs} THEN 1 ELSE 0 END AS fresh,
            ${sampleScale} AS sample_scale, ${halfLifeMs} AS half_life_ms
          FROM resources r JOIN providers p ON p.id = r.provider_id LEFT JOIN resource_metrics m ON m.resource_id = r.id
          WHERE ${where}
        )
        SELECT id, name, provider_name, price_usd, status, verification_level FROM t
        ORDER BY ${sortKeys[query.sort]} ${direction} NULLS LAST, id ASC
        LIMIT ${query.limit} OFFSET ${query.offset}`.pipe(Effect.flatMap(decodePage))
      const [count] = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM resources r WHERE ${where}`
      const ids = rows.map((r) => r.id)
      const caps =
        ids.length === 0
          ? []
          : yield* sql`SELECT resource_id, capability FROM resource_capabilities WHERE ${sql.in("resource_id", ids)}
              ORDER BY capability`.pipe(Effect.flatMap(decodeCapabilities))
      const capsBy = new Map<string, Array<string>>()
      for (const c of caps) capsBy.set(c.resource_id, [...(capsBy.get(c.resource_id) ?? []), c.capability])
      return {
        total: Number(count?.n ?? 0),
        rows: rows.map(
          (r): TableRow => ({
            id: r.id,
            name: r.name,
            providerName: r.provider_name,
            capabilities: capsBy.get(r.id) ?? [],
            priceUsd: r.price_usd,
            status: r.status,
            level: r.verification_level
          })
        )
      }
    })

  return repository("CatalogTableRepo", {
    page,
    capabilities: () =>
      sql<{ capability: string }>`SELECT DISTINCT c.capability FROM resource_capabilities c
        JOIN resources r ON r.id = c.resource_id WHERE r.listed = 1 ORDER BY c.capability`.pipe(
        Effect.map((rows) => rows.map((r) => String(r.capability)))
      ),
    counts: () =>
      sql`SELECT status, verification_level, COUNT(*) AS n FROM resources WHERE listed = 1
        GROUP BY status, verification_level`.pipe(
        Effect.flatMap(decodeCounts),
        Effect.map((rows) => rows.map((r) => ({ status: r.status, level: r.verification_level, count: r.n })))
      )
  })
})

/** The catalog as the status page's table and the catalog gauge read it: paged, filtered and sorted in SQL. */
