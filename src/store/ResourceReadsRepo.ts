import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import type { McpKind } from "../domain/mcp.js"
import type { ResourceRecord } from "../domain/resources.js"
import { decodeRows, repository } from "./repository.js"
import { LISTED_ONLY, PROBE_TARGET_RULE, recordsLoader } from "./resourceRows.js"
import { SearchSql } from "./SearchSql.js"
import { rankPage, type SearchPosition, SearchTuning, textQuery } from "./searchIndex.js"

export type { SearchPosition }

/** Filters of the x402 discovery listing; every one optional. */
export interface ListedPageQuery {
  readonly type?: string | undefined
  readonly network?: string | undefined
  readonly scheme?: string | undefined
  readonly payTo?: string | undefined
  readonly offset: number
  readonly limit: number
}

/** The catalog filters of a search (the quality filters need evidence, which is not the catalog's). */
export interface SearchFilters {
  readonly query?: string | undefined
  readonly capability?: string | undefined
  readonly scheme?: string | undefined
  readonly network?: string | undefined
  readonly asset?: string | undefined
  readonly maxPriceUsd?: number | undefined
  /** The x402 bazaar search's filters: resource type, payee, and where the resource came from. */
  readonly type?: string | undefined
  readonly payTo?: string | undefined
  readonly source?: string | undefined
}

/**
 * The catalog as readers see it: records by id, URL, capability or payee, the pages of
 * `GET /v1/resources`, search and x402 discovery, and what the probe schedule visits.
 */
export interface ResourceReadsRepoShape {
  readonly get: (id: ResourceId) => Effect.Effect<Option.Option<ResourceRecord>>
  /** The records of `ids` that exist, by id. */
  readonly getMany: (ids: ReadonlyArray<ResourceId>) => Effect.Effect<Array<ResourceRecord>>
  /** What buyers see: the listed resources. Every one: for whole-catalog jobs, never for an answer. */
  readonly list: () => Effect.Effect<Array<ResourceRecord>>
  /** Listed resources in id order after `afterId`, at most `limit`: a page of `GET /v1/resources`. */
  readonly listPage: (afterId: string | null, limit: number) => Effect.Effect<Array<ResourceRecord>>
  /**
   * Listed resources matching a search's text and catalog filters, by relevance then id, after
   * `after` (the last hit of the previous page), at most `limit`, relevance attached. Text goes
   * through the search index (`searchIndex.ts`); payment filters must hold on one option.
   */
  readonly searchPage: (
    filters: SearchFilters,
    after: SearchPosition | null,
    limit: number
  ) => Effect.Effect<Array<{ readonly record: ResourceRecord; readonly relevance: number }>>
  /** `searchPage`'s ids and relevance alone: for a caller that drops most hits before it needs their records. */
  readonly searchRanked: (
    filters: SearchFilters,
    after: SearchPosition | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<{ readonly id: ResourceId; readonly relevance: number }>>
  /** One page of listed resources, by id, with the total matching the filters (x402 discovery). */
  readonly listedPage: (
    query: ListedPageQuery
  ) => Effect.Effect<{ readonly records: Array<ResourceRecord>; readonly total: number }>
  /**
   * The resource at `url` (with `toolName`: the one selling that MCP tool, or with `kind` that
   * resource or prompt, there; one server's tools, resources and prompts share its URL), if any.
   */
  readonly findByUrl: (url: string, toolName?: string, kind?: McpKind) => Effect.Effect<Option.Option<ResourceRecord>>
  readonly byCapability: (capability: string) => Effect.Effect<Array<ResourceRecord>>
  /**
   * The resources that are evidence about a payee: the listed ones paying it, and any an operator
   * quarantined, listed or not, so unlisting a quarantined entry never lifts its refusal.
   */
  readonly byPayTo: (payTo: string) => Effect.Effect<Array<ResourceRecord>>
  /**
   * What preflight judges a payment to `url` by, in one read: every entry at `url` (listed or not:
   * each is what probes saw there), and of the other entries of `origin` the first `limit` by id
   * that pay one of `payTos` and the first `limit` by id at all. At most `limit` at the URL too.
   * Each part is read through an index (URL; origin and id; payee), never a scan of the origin.
   * The paying part is driven from the payee index: `id IN (payee's resources)` built the whole
   * list of a payee's resources first, and an EXISTS per origin entry walked the whole origin for
   * a payee it never pays. Left: a payee paid by many entries elsewhere and none here is walked.
   */
  readonly aroundUrl: (
    url: string,
    origin: string,
    payTos: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<Array<ResourceRecord>>
  /** The listed resource at `url` that pays `payTo` (the first by id), if any: the resource a settle names. */
  readonly namedPayee: (url: string, payTo: string) => Effect.Effect<ResourceId | null>
  /**
   * The one listed resource paying `payTo`, or null when there are none or several: what a payment
   * naming no resource is evidence about (`EconomicEventsRepo` counts it for that resource only).
   */
  readonly soleListedPayee: (payTo: string) => Effect.Effect<ResourceId | null>
  /**
   * What the probe schedule visits: listed resources, unlisted ones a healthy probe may list
   * (imported, ingested, delisted as unhealthy), and everything the config file names. A URL
   * someone validated once, or one a source stopped listing, is probed only on demand.
   */
  readonly probeTargets: () => Effect.Effect<Array<ResourceRecord>>
}

export class ResourceReadsRepo extends Context.Tag("sextant/ResourceReadsRepo")<
  ResourceReadsRepo,
  ResourceReadsRepoShape
>() {}

const decodeIds = decodeRows(Schema.Struct({ id: ResourceId }))

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tuning = yield* SearchTuning
  // Ranking reads grow with the catalog: they run where they cannot hold the request thread.
  const searchSql = yield* SearchSql
  const load = recordsLoader(sql)
  const listedOnly = sql.literal(LISTED_ONLY)
  const probeTargetRule = sql.literal(PROBE_TARGET_RULE)

  const searchRanked = (filters: SearchFilters, after: SearchPosition | null, limit: number) =>
    Effect.gen(function* () {
      const query = filters.query?.trim() ?? ""
      const text = textQuery(searchSql, query, tuning)
      // A query without a single word ("-") matches nothing, as the ranking rule has it.
      if (query !== "" && text === null) return []
      const sql = searchSql
      const optionFilters = [
        filters.scheme !== undefined ? sql`o.scheme = ${filters.scheme}` : null,
        filters.network !== undefined ? sql`o.network = ${filters.network}` : null,
        filters.asset !== undefined ? sql`o.asset = ${filters.asset}` : null,
        filters.payTo !== undefined ? sql`o.pay_to = ${filters.payTo}` : null,
        // Worst-case spend, as `worstCaseUsd` computes it.
        filters.maxPriceUsd !== undefined
          ? sql`(CASE WHEN o.scheme = 'upto' THEN COALESCE(o.max_amount_usd, o.amount_usd) ELSE o.amount_usd END) <= ${filters.maxPriceUsd}`
          : null
      ].filter((f) => f !== null)
      const where = sql.and([
        listedOnly,
        ...(filters.type !== undefined ? [sql`r.type = ${filters.type}`] : []),
        ...(filters.source !== undefined ? [sql`r.source = ${filters.source}`] : []),
        ...(filters.capability !== undefined
          ? [sql`r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${filters.capability})`]
          : []),
        sql`EXISTS (SELECT 1 FROM payment_options o WHERE o.resource_id = r.id ${optionFilters.length > 0 ? sql`AND ${sql.and(optionFilters)}` : sql``})`
      ])
      const ranked = yield* rankPage(searchSql, text, where, after, limit, tuning)
      return ranked.map(({ id, relevance }) => ({ id: ResourceId.make(id), relevance }))
    })

  const methods: ResourceReadsRepoShape = repository("ResourceReadsRepo", {
    get: (id: ResourceId) => load(sql`r.id = ${id}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    getMany: (ids: ReadonlyArray<ResourceId>) => (ids.length === 0 ? Effect.succeed([]) : load(sql.in("r.id", ids))),
    list: () => load(listedOnly),
    listPage: (afterId: string | null, limit: number) =>
      load(afterId === null ? listedOnly : sql.and([listedOnly, sql`r.id > ${afterId}`]), { limit }),
    searchRanked,
    searchPage: (filters: SearchFilters, after: SearchPosition | null, limit: number) =>
      Effect.gen(function* () {
        const ranked = yield* searchRanked(filters, after, limit)
        if (ranked.length === 0) return []
        const records = new Map<string, ResourceRecord>(
          (yield* load(
            sql.in(
              "r.id",
              ranked.map((r) => r.id)
            )
          )).map((r) => [r.resource.id, r] as const)
        )
        return ranked.flatMap(({ id, relevance }) => {
          const record = records.get(id)
          return record ? [{ record, relevance }] : []
        })
      }),
    listedPage: (query: ListedPageQuery) =>
      Effect.gen(function* () {
        const optionFilters = [
          query.network !== undefined ? sql`network = ${query.network}` : null,
          query.scheme !== undefined ? sql`scheme = ${query.scheme}` : null,
          query.payTo !== undefined ? sql`pay_to = ${query.payTo}` : null
        ].filter((f) => f !== null)
        const where = sql.and([
          listedOnly,
          ...(query.type !== undefined ? [sql`r.type = ${query.type}`] : []),
          ...(optionFilters.length > 0
            ? [sql`r.id IN (SELECT resource_id FROM payment_options WHERE ${sql.and(optionFilters)})`]
            : [])
        ])
        const [count] = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM resources r WHERE ${where}`
        const records = yield* load(where, { offset: query.offset, limit: query.limit })
        return { records, total: Number(count?.n ?? 0) }
      }),
    findByUrl: (url: string, toolName?: string, kind: McpKind = "tool") =>
      load(
        toolName === undefined
          ? sql`r.url = ${url}`
          : // A row stored before kinds existed has none: it is a tool.
            sql`r.url = ${url} AND json_extract(r.mcp_tool, '$.toolName') = ${toolName} AND COALESCE(json_extract(r.mcp_tool, '$.kind'), 'tool') = ${kind}`
      ).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    aroundUrl: (url: string, origin: string, payTos: ReadonlyArray<string>, limit: number) =>
      load(sql`r.id IN (
        SELECT id FROM (SELECT id FROM resources WHERE url = ${url} ORDER BY id LIMIT ${limit}) at_url
        UNION SELECT id FROM (SELECT o.resource_id AS id FROM payment_options o JOIN resources p ON p.id = o.resource_id
          WHERE ${payTos.length === 0 ? sql`0 = 1` : sql.in("o.pay_to", payTos)} AND p.origin = ${origin} AND p.url <> ${url}
          ORDER BY o.resource_id LIMIT ${limit}) paying
        UNION SELECT id FROM (SELECT id FROM resources WHERE origin = ${origin} AND url <> ${url} ORDER BY id LIMIT ${limit}) at_origin)`),
    byCapability: (capability: string) =>
      load(
        sql`${listedOnly} AND r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${capability})`
      ),
    byPayTo: (payTo: string) =>
      load(
        sql`(r.listed = 1 OR r.quarantined_by IS NOT NULL) AND r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`
      ),
    namedPayee: (url: string, payTo: string) =>
      sql`SELECT r.id FROM resources r WHERE r.url = ${url} AND +r.listed = 1
        AND EXISTS (SELECT 1 FROM payment_options o WHERE o.pay_to = ${payTo} AND o.resource_id = r.id) ORDER BY r.id LIMIT 1`.pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => rows[0]?.id ?? null)
      ),
    soleListedPayee: (payTo: string) =>
      // Driven by the payee's index (pay_to, resource_id): the cost is the payee's options, not the catalog.
      sql`SELECT DISTINCT o.resource_id AS id FROM payment_options o JOIN resources r ON r.id = o.resource_id
        WHERE o.pay_to = ${payTo} AND r.listed = 1 ORDER BY o.resource_id LIMIT 2`.pipe(
        Effect.flatMap(decodeIds),
        Effect.map((rows) => (rows.length === 1 ? rows[0]!.id : null))
      ),
    probeTargets: () => load(probeTargetRule)
  })
  return methods
})

export const ResourceReadsRepoLive = Layer.effect(ResourceReadsRepo, make)
