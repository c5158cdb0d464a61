import { readFile } from "node:fs/promises"
import { Context, Data, Effect, Either, Layer, Schema } from "effect"
import { AppConfig } from "../config.js"
import { type CatalogEntry, importSource, probeMayList } from "../domain/resources.js"
import { fetchJson, type OutboundRequests } from "../outbound/fetchAnswer.js"
import { CatalogWritesRepo } from "../store/CatalogWritesRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { admitted } from "./admitEntries.js"
import { DiscoveryPage, type ImportDeployment, readItem } from "./bazaarItems.js"
import { quotaKeys } from "./ingestionQuota.js"

/**
 * Items asked for per page: the x402 specification's ceiling, which every compliant service
 * accepts. A page holding more than asked is refused, as is one over MAX_PAGE_BYTES: a source is
 * another party's server, and its answers are read within the bounds a probe's are.
 */
const PAGE_SIZE = 100
const MAX_PAGE_BYTES = 4 * 1024 * 1024
/** A source listing more than this many items is read no further (and nothing is delisted). */
export const MAX_ITEMS = 100_000
const PAGE_TIMEOUT_MS = 30_000

/** Where an import reads: a configured source, or what `sextant catalog import` was given. */
export interface ImportSourceSpec {
  readonly id: string
  /** An http(s) URL of a discovery service, or a path to a JSON file of a page (`{items}`) or of items. */
  readonly location: string
  readonly networks?: ReadonlyArray<string> | undefined
}

export interface ImportSummary {
  readonly source: string
  readonly pages: number
  readonly items: number
  /** Items payable on this deployment's network and asset, upserted unlisted until a healthy probe. */
  readonly kept: number
  readonly added: number
  readonly skippedOtherNetwork: number
  readonly skippedInvalid: number
  /** Kept items whose URL the catalog already has from another source (config, registration, another import). */
  readonly skippedCataloged: number
  /** New items over an ingestion quota (per source, origin or payee; docs/trust.md), not stored. */
  readonly skippedQuota: number
  /** Resources of this source it no longer lists, delisted now. */
  readonly delisted: number
  /** The newest `lastUpdated` among kept items, ISO; null when none carried one. */
  readonly newestLastUpdated: string | null
}

export class ImportFailed extends Data.TaggedError("ImportFailed")<{
  readonly source: string
  readonly reason: string
}> {}

/** `<url>/discovery/resources`, unless the URL already names that endpoint. */
export const discoveryEndpoint = (url: string) =>
  /\/discovery\/resources\/?$/.test(new URL(url).pathname) ? url : `${url.replace(/\/+$/, "")}/discovery/resources`

const decodePage = Schema.decodeUnknownEither(DiscoveryPage)

/** Progress callback: items read so far and the total the source announced (null until known). */
export type OnProgress = (read: number, total: number | null) => void

export interface ImporterShape {
  /**
   * One pull of a source: reads every item, keeps those payable here, upserts them unlisted (source
   * `import:<id>`) and delists what this source listed before and no longer does. A pull that
   * fails part-way writes nothing and delists nothing.
   */
  readonly pull: (spec: ImportSourceSpec, onProgress?: OnProgress) => Effect.Effect<ImportSummary, ImportFailed>
}

/** Imports from other discovery services (config `catalogSources`, `sextant catalog import`). */
export class Importer extends Context.Tag("sextant/Importer")<Importer, ImporterShape>() {
  static readonly Live = Layer.effect(
    Importer,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const catalogWrites = yield* CatalogWritesRepo
  const listings = yield* ResourceListingRepo

  /**
   * Pages are fetched like a probe's documents: the outbound guard on every hop (redirects
   * included), the connection pinned to the checked address, the body capped. The origins of the
   * configured `catalogSources` are the operator's own choice and trusted like the probes'
   * `trustedOrigins`; where a source redirects to is not.
   */
  const outbound: OutboundRequests = {
    ...config.probes,
    trustedOrigins: [...config.probes.trustedOrigins, ...config.catalogSources.map((s) => new URL(s.url).origin)],
    timeoutMs: PAGE_TIMEOUT_MS
  }

  const fetchPage = (endpoint: string, offset: number, source: string) =>
    Effect.gen(function* () {
      const url = new URL(endpoint)
      url.searchParams.set("limit", String(PAGE_SIZE))
      url.searchParams.set("offset", String(offset))
      const answer = yield* fetchJson(url.href, outbound, MAX_PAGE_BYTES).pipe(
        Effect.mapError((e) => new ImportFailed({ source, reason: e.reason }))
      )
      if (answer.httpStatus !== 200)
        return yield* new ImportFailed({ source, reason: `${url.href} answered ${answer.httpStatus}` })
      const page = decodePage(answer.body)
      if (Either.isLeft(page))
        return yield* new ImportFailed({
          source,
          reason: `${url.href} is not a discovery page${answer.note === null ? "" : ` (${answer.note})`}`
        })
      if (page.right.items.length > PAGE_SIZE) {
        return yield* new ImportFailed({
          source,
          reason: `${url.href} answered ${page.right.items.length} items where at most ${PAGE_SIZE} were asked`
        })
      }
      return page.right
    })

  /** Every item of the source, page by page until `total` (or an empty or short page). */
  const readAll = (spec: ImportSourceSpec, onProgress: OnProgress) =>
    Effect.gen(function* () {
      if (!/^https?:\/\//.test(spec.location)) {
        const text = yield* Effect.tryPromise({
          try: () => readFile(spec.location, "utf8"),
          catch: (e) =>
            new ImportFailed({ source: spec.id, reason: `cannot read ${spec.location}: ${(e as Error).message}` })
        })
        const json = yield* Effect.try({
          try: () => JSON.parse(text) as unknown,
          catch: () => new ImportFailed({ source: spec.id, reason: `${spec.location} is not JSON` })
        })
        const page = decodePage(Array.isArray(json) ? { items: json } : json)
        if (Either.isLeft(page))
          return yield* new ImportFailed({ source: spec.id, reason: `${spec.location} holds no items` })
        if (page.right.items.length > MAX_ITEMS)
          return yield* new ImportFailed({ source: spec.id, reason: `more than ${MAX_ITEMS} items` })
        onProgress(page.right.items.length, page.right.items.length)
        return { items: page.right.items, pages: 1 }
      }
      const endpoint = discoveryEndpoint(spec.location)
      const items: Array<unknown> = []
      let pages = 0
      for (;;) {
        const page = yield* fetchPage(endpoint, items.length, spec.id)
        pages++
        items.push(...page.items)
        const total = page.pagination?.total ?? null
        onProgress(items.length, total)
        if (items.length > MAX_ITEMS)
          return yield* new ImportFailed({ source: spec.id, reason: `more than ${MAX_ITEMS} items` })
        if (page.items.length === 0 || total === null || items.length >= total) break
      }
      return { items, pages }
    })

  const pull = (spec: ImportSourceSpec, onProgress: OnProgress = () => {}) =>
    Effect.gen(function* () {
      const source = importSource(spec.id)
      const { items, pages } = yield* readAll(spec, onProgress)
      const deployment: ImportDeployment = {
        network: config.network,
        assetContract: config.asset.assetContract,
        decimals: config.asset.decimals,
        networks: spec.networks
      }
      const kept = new Map<string, CatalogEntry>()
      let otherNetwork = 0
      let invalid = 0
      let newest: number | null = null
      for (const raw of items) {
        const reading = readItem(raw, spec.id, deployment)
        if (reading._tag === "OtherNetwork") otherNetwork++
        else if (reading._tag === "Invalid") invalid++
        else {
          kept.set(reading.entry.resource.url, reading.entry)
          if (reading.lastUpdatedMs !== null && (newest === null || reading.lastUpdatedMs > newest))
            newest = reading.lastUpdatedMs
        }
      }
      // A URL another source brought in stays theirs; one only ever validated is taken up.
      const taken = yield* catalogWrites.byUrls([...kept.keys()])
      const foreign = new Set(taken.filter((r) => r.source !== source && r.source !== "validate").map((r) => r.url))
      const known = new Set(taken.filter((r) => r.source === source).map((r) => r.url))
      const candidates = [...kept.values()].filter((e) => !foreign.has(e.resource.url))
      // Entries the source already holds stay; new ones must fit the ingestion quotas.
      const { admitted: fresh, refused } = yield* admitted(
        catalogWrites,
        config.ingestion,
        source,
        candidates.filter((e) => !known.has(e.resource.url)).map((e) => ({ item: e, keys: quotaKeys(e, null) }))
      )
      const entries = [...candidates.filter((e) => known.has(e.resource.url)), ...fresh]
      yield* catalogWrites.upsertImported(entries, source, {
        actor: source,
        reason: `listed by source ${spec.id}; unlisted until a healthy probe`
      })
      const vanished = (yield* catalogWrites.bySource(source)).filter(
        (r) => !kept.has(r.url) && (r.listed || probeMayList(r.hold))
      )
      yield* Effect.forEach(
        vanished,
        (r) =>
          listings.setListed(r.id, false, {
            actor: source,
            reason: `no longer listed by source ${spec.id}`,
            hold: "source"
          }),
        { discard: true }
      )
      return {
        source,
        pages,
        items: items.length,
        kept: entries.length,
        added: entries.filter((e) => !known.has(e.resource.url)).length,
        skippedOtherNetwork: otherNetwork,
        skippedInvalid: invalid,
        skippedCataloged: kept.size - candidates.length,
        skippedQuota: refused.length,
        delisted: vanished.length,
        newestLastUpdated: newest === null ? null : new Date(newest).toISOString()
      } satisfies ImportSummary
    }).pipe(Effect.withSpan("Importer.pull", { attributes: { source: spec.id } }))

  return { pull } satisfies ImporterShape
})
