import { afterAll, beforeAll, expect } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, TestClock } from "effect"
import { ServicesLive } from "../src/app.js"
import { Importer, type ImportSourceSpec } from "../src/catalog/Importer.js"
import { ImportSchedulerLive } from "../src/catalog/ImportScheduler.js"
import { Discovery } from "../src/discovery/Discovery.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { discoveredId } from "../src/verification/discoveredEntry.js"
import { Prober } from "../src/verification/Prober.js"
import {
  type DiscoveryServiceFixture,
  ITEM_COUNT,
  isKept,
  itemUrl,
  startDiscoveryService
} from "./fixtures/discoveryService.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { layer } from "./support/effectTest.js"
import { testConfig } from "./support/server.js"

let resources: X402Fixture
let service: DiscoveryServiceFixture
let source: ImportSourceSpec

const KEPT = Array.from({ length: ITEM_COUNT }, (_, i) => i).filter(isKept)
const pull = () => Effect.flatMap(Importer, (importer) => importer.pull(source))
const idOf = (i: number) => discoveredId(new URL(itemUrl(resources.origin, i)))
const rowsOfSource = () => Effect.flatMap(CatalogWritesRepo, (repo) => repo.bySource("import:fixture"))
const listed = () => Effect.flatMap(Discovery, (d) => d.x402Page({ limit: 1000 }))
const probe = (i: number) => Effect.flatMap(Prober, (p) => p.probeResource(idOf(i)))
const listingChanges = (i: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{
        listed: number
        actor: string
        reason: string
      }>`SELECT listed, actor, reason FROM listing_changes WHERE resource_id = ${idOf(i)} ORDER BY id`
  )

beforeAll(async () => {
  resources = await startX402Fixture()
  service = startDiscoveryService(resources.origin)
  source = { id: "fixture", location: service.url }
})
afterAll(async () => {
  await service.stop()
  await resources.stop()
})

// Built on the suite's first test, once the fixtures it names are up; released after its last.
const services = Layer.suspend(() => {
  const base = testConfig()
  return ServicesLive(
    testConfig({
      catalog: [],
      catalogSources: [{ id: "fixture", url: service.url, intervalSeconds: 600 }],
      probes: { ...base.probes, trustedOrigins: [resources.origin], timeoutMs: 2000 },
      // The fixture serves every item from one origin to one payee: above the default quotas.
      ingestion: { ...base.ingestion, maxPerOrigin: 5000, maxPerPayee: 5000 }
    })
  )
})

layer(services)("imports from a Bazaar-shaped discovery service", (it) => {
  it.live("after an import exactly this network's Stellar items are in the store, unlisted until probed", () =>
    Effect.gen(function* () {
      const summary = yield* pull()
      expect(summary).toMatchObject({
        source: "import:fixture",
        pages: 25,
        items: ITEM_COUNT,
        kept: KEPT.length,
        added: KEPT.length,
        skippedOtherNetwork: ITEM_COUNT - KEPT.length,
        skippedInvalid: 0,
        skippedCataloged: 0,
        delisted: 0
      })
      // Item 2499 is the newest kept one and sends lastUpdated as an ISO string; even items send numbers.
      expect(summary.newestLastUpdated).toBe(
        new Date(Date.parse("2026-11-20T12:00:00.000Z") + 2499 * 1000).toISOString()
      )
      const rows = yield* rowsOfSource()
      expect(rows.map((r) => r.url).sort()).toEqual(KEPT.map((i) => itemUrl(resources.origin, i)).sort())
      expect(rows.every((r) => !r.listed && r.hold === "awaiting_probe")).toBe(true)
      expect((yield* listed()).pagination.total).toBe(0)
      const record = yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(idOf(7 * 5)))
      expect(record._tag).toBe("Some")
    })
  )

  it.live(
    "an imported entry is read from the item: payment option, provider from the origin, description from metadata",
    () =>
      Effect.gen(function* () {
        const found = yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(idOf(10)))
        if (found._tag !== "Some") throw new Error("item 10 not imported")
        expect(found.value).toMatchObject({
          resource: {
            url: itemUrl(resources.origin, 10),
            method: "GET",
            description: "imported item 10",
            status: "DISCOVERED"
          },
          provider: { id: `host:${new URL(resources.origin).host}`, url: resources.origin },
          paymentOptions: [{ network: "stellar:testnet", scheme: "exact", amount: "10000", amountUsd: 0.001 }],
          listing: { listed: false, source: "import:fixture", trusted: false }
        })
      })
  )

  it.live("a healthy probe lists an imported resource (actor probe); an unhealthy one leaves it unlisted", () =>
    Effect.gen(function* () {
      resources.down.add("/paid/imp-5")
      expect((yield* probe(0)).healthy).toBe(true)
      expect((yield* probe(5)).healthy).toBe(false)
      const page = yield* listed()
      expect(page.items.map((i) => i.resource)).toEqual([itemUrl(resources.origin, 0)])
      expect((yield* listingChanges(0)).at(-1)).toMatchObject({ listed: 1, actor: "probe" })
      expect((yield* listingChanges(0)).at(-1)!.reason).toContain("first healthy probe")
      resources.down.delete("/paid/imp-5")
    })
  )

  it.live(
    "items the source no longer lists are delisted on the next pull and not probed; they wait for a probe again when they return",
    () =>
      Effect.gen(function* () {
        expect((yield* probe(15)).healthy).toBe(true)
        for (const i of [0, 5, 9, 1]) service.vanished.add(i)
        const summary = yield* pull()
        expect(summary.delisted).toBe(3)
        expect(summary.kept).toBe(KEPT.length - 3)
        expect((yield* listed()).items.map((i) => i.resource)).toEqual([itemUrl(resources.origin, 15)])
        expect((yield* listingChanges(0)).at(-1)).toMatchObject({
          listed: 0,
          actor: "import:fixture",
          reason: "no longer listed by source fixture"
        })
        const targets = yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.probeTargets())
        const targetIds = new Set(targets.map((r) => r.resource.id))
        for (const i of [0, 5, 9]) expect(targetIds.has(idOf(i))).toBe(false)
        // A healthy probe does not bring back what the source dropped.
        expect((yield* probe(0)).healthy).toBe(true)
        expect((yield* listed()).items.map((i) => i.resource)).not.toContain(itemUrl(resources.origin, 0))

        service.vanished.clear()
        const back = yield* pull()
        expect(back).toMatchObject({ delisted: 0, added: 0, kept: KEPT.length })
        const rows = new Map((yield* rowsOfSource()).map((r) => [r.id, r]))
        expect(rows.get(idOf(0))).toMatchObject({ listed: false, hold: "awaiting_probe" })
        expect((yield* probe(0)).healthy).toBe(true)
        expect((yield* listed()).items.map((i) => i.resource)).toContain(itemUrl(resources.origin, 0))
      })
  )

  it.live("an operator's unlisting survives healthy probes and later pulls", () =>
    Effect.gen(function* () {
      yield* Effect.flatMap(ResourceListingRepo, (repo) =>
        repo.setListed(idOf(15), false, { actor: "ops", reason: "curated out" })
      )
      expect((yield* probe(15)).healthy).toBe(true)
      yield* pull()
      expect((yield* listed()).items.map((i) => i.resource)).not.toContain(itemUrl(resources.origin, 15))
      expect((yield* listingChanges(15)).at(-1)).toMatchObject({ listed: 0, actor: "ops" })
    })
  )

  it.live("a source that fails part-way, or is not a discovery service, changes nothing", () =>
    Effect.gen(function* () {
      const before = yield* rowsOfSource()
      service.vanished.add(20)
      service.failFromOffset = 1000
      const failed = yield* Effect.either(Effect.flatMap(Importer, (i) => i.pull(source)))
      service.failFromOffset = null
      service.vanished.clear()
      expect(failed._tag === "Left" && failed.left.reason).toContain("offset=1000")
      expect(failed._tag === "Left" && failed.left.reason).toContain("answered 500")
      const wrong = yield* Effect.either(
        Effect.flatMap(Importer, (i) => i.pull({ id: "fixture", location: `${resources.origin}/free` }))
      )
      expect(wrong._tag === "Left" && wrong.left.reason).toContain("is not a discovery page")
      expect(yield* rowsOfSource()).toEqual(before)
    })
  )

  it.effect("the schedule pulls at start and again each intervalSeconds (TestClock)", () =>
    Effect.gen(function* () {
      const pages = yield* Effect.gen(function* () {
        const start = service.pagesServed()
        const counts: Array<number> = []
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* Layer.buildWithScope(ImportSchedulerLive, yield* Effect.scope)
            const settle = Effect.promise(() => new Promise((r) => setTimeout(r, 300)))
            yield* settle
            counts.push(service.pagesServed() - start)
            yield* TestClock.adjust("599 seconds")
            yield* settle
            counts.push(service.pagesServed() - start)
            yield* TestClock.adjust("2 seconds")
            for (let tries = 0; tries < 50 && service.pagesServed() - start < 50; tries++) yield* settle
            counts.push(service.pagesServed() - start)
          })
        )
        return counts
      })
      expect(pages).toEqual([25, 25, 50])
    })
  )
})
