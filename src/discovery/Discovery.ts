import { Clock, Context, Effect, Layer, Option } from "effect"
import { notFound } from "../domain/errors.js"
import { DISCOVERY_DEFAULT_LIMIT, type DiscoveryQuery, type DiscoveryResponse } from "../domain/discovery.js"
import { noEvidence } from "../domain/evidence.js"
import { emptyMetrics } from "../domain/metrics.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import type { ResourceSearchRequest } from "../domain/resources.js"
import type { ResourceDetail, SearchHit } from "../domain/catalog.js"
import { CurationRepo } from "../store/CurationRepo.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { search } from "./search.js"
import { discoveryItem } from "./x402Items.js"

const TRANSITIONS_SHOWN = 20

const make = Effect.gen(function* () {
  const repo = yield* ResourcesRepo
  const evidence = yield* EvidenceReader
  const transitionsRepo = yield* TransitionsRepo
  const curationRepo = yield* CurationRepo
  const observations = yield* ObservationsRepo

  /** One page of the listed catalog in the x402 discovery shape, ordered by resource id. */
  const x402Page = (query: DiscoveryQuery) =>
    Effect.gen(function* () {
      const limit = query.limit ?? DISCOVERY_DEFAULT_LIMIT
      const offset = query.offset ?? 0
      const { records, total } = yield* repo.listedPage({ ...query, limit, offset })
      const ids = records.map((r) => r.resource.id)
      const found = yield* evidence.forResources(ids)
      const observed = yield* observations.latestHealthy(ids)
      const nowMs = yield* Clock.currentTimeMillis
      const items = records.map((record) => {
        const id = record.resource.id
        return discoveryItem(record, found.get(id) ?? noEvidence(id), observed.get(id) ?? null, nowMs)
      })
      return { x402Version: 2, items, pagination: { limit, offset, total } } satisfies DiscoveryResponse
    })

  const get = (id: string) =>
    Effect.gen(function* () {
      const record = yield* repo.get(id).pipe(Effect.flatMap(Option.match({
        onNone: () => Effect.fail(notFound("resource", id)),
        onSome: Effect.succeed
      })))
      const { metrics } = yield* evidence.forResource(id)
      const transitions = yield* transitionsRepo.recent(id, TRANSITIONS_SHOWN)
      const curation = Option.getOrElse(yield* curationRepo.curationOf(id), () => ({ quarantine: null, lastListingChange: null }))
      const economicEvidence = yield* evidence.payments(record)
      return { ...record, metrics, transitions, economicEvidence, curation } satisfies ResourceDetail
    }).pipe(Effect.withSpan("Discovery.get"))

  const find = (request: ResourceSearchRequest) =>
    Effect.gen(function* () {
      const records = request.capability !== undefined ? yield* repo.byCapability(request.capability) : yield* repo.list()
      const byId = yield* evidence.forResources(records.map((r) => r.resource.id))
      const hits = search(
        records.map((record) => ({
          record,
          metrics: byId.get(record.resource.id)?.metrics ?? emptyMetrics(record.resource.id)
        })),
        request
      )
      return hits.map((h): SearchHit => ({ ...h.record, metrics: h.metrics, relevance: h.relevance }))
    })

  return {
    list: () => repo.list().pipe(Effect.withSpan("Discovery.list")),
    get,
    search: (request: ResourceSearchRequest) => find(request).pipe(Effect.withSpan("Discovery.search")),
    x402Page: (query: DiscoveryQuery) => x402Page(query).pipe(Effect.withSpan("Discovery.x402Page"))
  }
})

/** Discovery: the catalog as buyers read it, with the evidence-derived metrics attached. */
export class Discovery extends Context.Tag("sextant/Discovery")<Discovery, Effect.Effect.Success<typeof make>>() {
  static readonly Live = Layer.effect(Discovery, make)
}
