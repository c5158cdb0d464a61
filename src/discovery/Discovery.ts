import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ResourceDetail, ResourceList, SearchHit, SearchResponse } from "../domain/catalog.js"
import {
  DISCOVERY_DEFAULT_LIMIT,
  DISCOVERY_SEARCH_DEFAULT_LIMIT,
  type DiscoveryQuery,
  type DiscoveryResponse,
  type DiscoverySearchQuery,
  type DiscoverySearchResponse
} from "../domain/discovery.js"
import { InvalidRequest, type NotFound, notFound } from "../domain/errors.js"
import { noEvidence } from "../domain/evidence.js"
import type { ResourceId } from "../domain/ids.js"
import { emptyMetrics } from "../domain/metrics.js"
import { encodeCursor, PAGE_LIMITS, readCursor, scopeOf } from "../domain/pagination.js"
import type { ResourceRecord, ResourceSearchRequest } from "../domain/resources.js"
import { BAZAAR } from "../extensions/bazaar.js"
import { CurationRepo } from "../store/CurationRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import type { SearchPosition } from "../store/searchIndex.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { filtersOnQuality, qualityMatches } from "./search.js"
import { discoveryItem } from "./x402Items.js"

export interface PageRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

export interface DiscoveryShape {
  /** One page of the listed catalog in id order; `nextCursor` while more follow. */
  readonly list: (page: PageRequest) => Effect.Effect<typeof ResourceList.Type, InvalidRequest>
  /** One resource with its metrics, recent transitions, economic evidence and curation. */
  readonly get: (id: ResourceId) => Effect.Effect<ResourceDetail, NotFound>
  /** One page of search hits, filtered on quality with each hit's current metrics. */
  readonly search: (request: ResourceSearchRequest) => Effect.Effect<typeof SearchResponse.Type, InvalidRequest>
  /** `GET /discovery/resources`: the x402 Bazaar listing of the listed catalog, ordered by resource id, offset-paged. */
  readonly x402Page: (query: DiscoveryQuery) => Effect.Effect<DiscoveryResponse>
  /**
   * The x402 Bazaar search: the listed catalog ranked by the full-text index (relevance, then id),
   * with the x402 filters, in cursor pages; `partialResults` says more matches follow this page.
   */
  readonly x402Search: (query: DiscoverySearchQuery) => Effect.Effect<DiscoverySearchResponse, InvalidRequest>
}

/** Discovery: the catalog as buyers read it, with the evidence-derived metrics attached. */
export class Discovery extends Context.Tag("sextant/Discovery")<Discovery, DiscoveryShape>() {
  static readonly Live = Layer.effect(
    Discovery,
    Effect.suspend(() => make)
  )
}

const TRANSITIONS_SHOWN = 20

/** Hits read per store batch when quality filters may drop some. */
const QUALITY_BATCH = 200

/**
 * Store batches one search request may read when quality filters drop hits: without a bound, a
 * filter nothing passes would read the whole catalog in one request. Past it the page answers
 * what it found, with `nextCursor` at the last resource read.
 */
export const QUALITY_BATCHES = 5

const LIST_CURSOR = "resources"
const SEARCH_CURSOR = "search"
const X402_SEARCH_CURSOR = "x402-search"

/**
 * The `extensions` filter as a source: every resource without it; `bazaar` the resources
 * catalogued from a payment's bazaar extension (the one extension recorded per resource); null
 * (nothing matches) for any other key, which no stored resource is known to carry.
 */
const sourceForExtensions = (extensions: string | undefined): "any" | "bazaar" | null => {
  const keys = new Set(
    (extensions ?? "")
      .split(",")
      .map((k) => k.trim())
      .filter((k) => k !== "")
  )
  if (keys.size === 0) return "any"
  return keys.size === 1 && keys.has(BAZAAR) ? "bazaar" : null
}

/** Where a search cursor resumes: none without one; a cursor of other filters is the caller's mistake (400). */
const searchPosition = (kind: string, cursor: string | undefined, scope: string) =>
  cursor === undefined
    ? Effect.succeed<SearchPosition | null>(null)
    : Effect.flatMap(readCursor(kind, cursor), (position) =>
        position.scope !== scope || position.relevance === undefined
          ? new InvalidRequest({ message: "cursor: it belongs to a search with other filters" })
          : Effect.succeed<SearchPosition | null>({ relevance: position.relevance, id: position.id })
      )

/** A page request of a listing: both optional (the default page size; the first page). */
/** The filters a search cursor is bound to: everything but the page itself. */
const searchScope = (r: ResourceSearchRequest) =>
  scopeOf([
    r.query?.trim() ?? "",
    r.capability,
    r.scheme,
    r.network,
    r.asset,
    r.maxPriceUsd,
    r.minimumReliability,
    r.maximumP95LatencyMs
  ])

const make = Effect.gen(function* () {
  const repo = yield* ResourceReadsRepo
  const evidence = yield* EvidenceReader
  const transitionsRepo = yield* TransitionsRepo
  const curationRepo = yield* CurationRepo
  const observations = yield* ObservationsRepo

  /** Records as x402 discovery items, each with its evidence and newest healthy observation. */
  const itemsOf = (records: ReadonlyArray<ResourceRecord>) =>
    Effect.gen(function* () {
      const ids = records.map((r) => r.resource.id)
      const found = yield* evidence.forResources(ids)
      const observed = yield* observations.latestHealthy(ids)
      const nowMs = yield* Clock.currentTimeMillis
      return records.map((record) => {
        const id = record.resource.id
        return discoveryItem(record, found.get(id) ?? noEvidence(id), observed.get(id) ?? null, nowMs)
      })
    })

  const x402Page = (query: DiscoveryQuery) =>
    Effect.gen(function* () {
      const limit = query.limit ?? DISCOVERY_DEFAULT_LIMIT
      const offset = query.offset ?? 0
      const { records, total } = yield* repo.listedPage({ ...query, limit, offset })
      const items = yield* itemsOf(records)
      return { x402Version: 2, items, pagination: { limit, offset, total } } satisfies DiscoveryResponse
    })

  const x402Search = (query: DiscoverySearchQuery) =>
    Effect.gen(function* () {
      const limit = query.limit ?? DISCOVERY_SEARCH_DEFAULT_LIMIT
      const filters = {
        query: query.query,
        type: query.type,
        network: query.network,
        scheme: query.scheme,
        payTo: query.payTo
      }
      const scope = scopeOf([X402_SEARCH_CURSOR, filters, query.extensions ?? null])
      const after = yield* searchPosition(X402_SEARCH_CURSOR, query.cursor, scope)
      const source = sourceForExtensions(query.extensions)
      const found =
        source === null
          ? []
          : yield* repo.searchPage({ ...filters, source: source === "any" ? undefined : source }, after, limit + 1)
      const page = found.slice(0, limit)
      const last = page[page.length - 1]
      const cursor =
        found.length > limit && last
          ? encodeCursor(X402_SEARCH_CURSOR, { id: last.record.resource.id, relevance: last.relevance, scope })
          : null
      const resources = yield* itemsOf(page.map((hit) => hit.record))
      return {
        x402Version: 2,
        resources,
        partialResults: cursor !== null,
        pagination: { limit, cursor }
      } satisfies DiscoverySearchResponse
    })

  const get = (id: ResourceId) =>
    Effect.gen(function* () {
      const record = yield* repo.get(id).pipe(
        Effect.flatMap(
          Option.match({
            onNone: () => Effect.fail(notFound("resource", id)),
            onSome: Effect.succeed
          })
        )
      )
      const { metrics } = yield* evidence.forResource(id)
      const transitions = yield* transitionsRepo.recent(id, TRANSITIONS_SHOWN)
      const curation = Option.getOrElse(yield* curationRepo.curationOf(id), () => ({
        quarantine: null,
        lastListingChange: null
      }))
      const economicEvidence = yield* evidence.payments(record)
      return { ...record, metrics, transitions, economicEvidence, curation } satisfies ResourceDetail
    }).pipe(Effect.withSpan("Discovery.get"))

  const list = (page: PageRequest) =>
    Effect.gen(function* () {
      const limit = page.limit ?? PAGE_LIMITS.resources.default
      const after = page.cursor === undefined ? null : (yield* readCursor(LIST_CURSOR, page.cursor)).id
      const rows = yield* repo.listPage(after, limit + 1)
      const resources = rows.slice(0, limit)
      const last = resources[resources.length - 1]
      const nextCursor = rows.length > limit && last ? encodeCursor(LIST_CURSOR, { id: last.resource.id }) : null
      return { resources, nextCursor }
    })

  /**
   * One page of search hits. The store ranks and filters on the catalog (text through the search
   * index); the quality filters need each hit's current metrics, so with them the store is read in
   * batches until the page is full, the catalog ends, or `QUALITY_BATCHES` were read (then the
   * page may hold fewer hits than `limit`, and `nextCursor` goes on from the last resource read).
   */
  const find = (request: ResourceSearchRequest) =>
    Effect.gen(function* () {
      const limit = request.limit ?? PAGE_LIMITS.search.default
      const scope = searchScope(request)
      let after = yield* searchPosition(SEARCH_CURSOR, request.cursor, scope)
      const batch = filtersOnQuality(request) ? Math.max(limit + 1, QUALITY_BATCH) : limit + 1
      const hits: Array<SearchHit> = []
      let resumeAt: typeof after = null
      for (let batches = 1; ; batches++) {
        // Ids first: only the hits that pass the quality filters are read whole.
        const found = yield* repo.searchRanked(request, after, batch)
        const byId = yield* evidence.forResources(found.map((f) => f.id))
        const passing = found
          .map(({ id, relevance }) => ({ id, relevance, metrics: byId.get(id)?.metrics ?? emptyMetrics(id) }))
          .filter(({ metrics }) => qualityMatches(metrics, request))
          .slice(0, limit + 1 - hits.length)
        const records = new Map((yield* repo.getMany(passing.map((p) => p.id))).map((r) => [r.resource.id, r] as const))
        for (const { id, relevance, metrics } of passing) {
          const record = records.get(id)
          if (record !== undefined) hits.push({ ...record, metrics, relevance })
        }
        const last = found[found.length - 1]
        if (hits.length > limit || found.length < batch || last === undefined) break
        after = { relevance: last.relevance, id: last.id }
        if (batches >= QUALITY_BATCHES) {
          resumeAt = after
          break
        }
      }
      const resources = hits.slice(0, limit)
      const last = resources[resources.length - 1]
      const position = hits.length > limit && last ? { id: last.resource.id, relevance: last.relevance } : resumeAt
      const nextCursor = position === null ? null : encodeCursor(SEARCH_CURSOR, { ...position, scope })
      return { resources, count: resources.length, nextCursor }
    })

  return {
    list: (page: PageRequest) => list(page).pipe(Effect.withSpan("Discovery.list")),
    get,
    search: (request: ResourceSearchRequest) => find(request).pipe(Effect.withSpan("Discovery.search")),
    x402Page: (query: DiscoveryQuery) => x402Page(query).pipe(Effect.withSpan("Discovery.x402Page")),
    x402Search: (query: DiscoverySearchQuery) => x402Search(query).pipe(Effect.withSpan("Discovery.x402Search"))
  } satisfies DiscoveryShape
})
