import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, ManagedRuntime, TestClock, TestContext } from "effect"
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
import { testConfig } from "./support/server.js"

let resources: X402Fixture
let service: DiscoveryServiceFixture
let runtime: ManagedRuntime.ManagedRuntime<any, unknown>
let source: ImportSourceSpec

const KEPT = Array.from({ length: ITEM_COUNT }, (_, i) => i).filter(isKept)
const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect)

const pull = () => run(Effect.flatMap(Importer, (importer) => importer.pull(source)))
const idOf = (i: number) => discoveredId(new URL(itemUrl(resources.origin, i)))
const rowsOfSource = () => run(Effect.flatMap(CatalogWritesRepo, (repo) => repo.bySource("import:fixture")))
const listed = () => run(Effect.flatMap(Discovery, (d) => d.x402Page({ limit: 1000 })))
const probe = (i: number) => run(Effect.flatMap(Prober, (p) => p.probeResource(idOf(i))))
const listingChanges = (i: number) =>
  run(
    Effect.flatMap(
      SqlClient.SqlClient,
      (sql) =>
        sql<{
          listed: number
          actor: string
          reason: string
        }>`SELECT listed, actor, reason FROM listing_changes WHERE resource_id = ${idOf(i)} ORDER BY id`
    )
  )

beforeAll(async () => {
  resources = await startX402Fixture()
  service = startDiscoveryService(resources.origin)
  source = { id: "fixture", location: service.url }
  const base = testConfig()
  runtime = ManagedRuntime.make(
    ServicesLive(
      testConfig({
        catalog: [],
        catalogSources: [{ id: "fixture", url: service.url, intervalSeconds: 600 }],
        probes: { ...base.probes, trustedOrigins: [resources.origin], timeoutMs: 2000 },
        // The fixture serves every item from one origin to one payee: above the default quotas.
        ingestion: { ...base.ingestion, maxPerOrigin: 5000, maxPerPayee: 5000 }
      })
    )
  )
})
afterAll(async () => {
  await runtime.dispose()
  await service.stop()
  await resources.stop()
})

describe("imports from a Bazaar-shaped discovery service", () => {
  test("after an import exactly this network's Stellar items are in the store, unlisted until probed", async () => {
    const summary = await pull()
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
    expect(summary.newestLastUpdated).toBe(new Date(Date.parse("2026-11-20T12:00:00.000Z") + 2499 * 1000).toISOString())
    const rows = await rowsOfSource()
    expect(rows.map((r) => r.url).sort()).toEqual(KEPT.map((i) => itemUrl(resources.origin, i)).sort())
    expect(rows.every((r) => !r.listed && r.hold === "awaiting_probe")).toBe(true)
    expect((await listed()).pagination.total).toBe(0)
    const record = await run(Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(idOf(7 * 5))))
    expect(record._tag).toBe("Some")
  })

  test("an imported entry is read from the item: payment option, provider from the origin, description from metadata", async () => {
    const found = await run(Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(idOf(10))))
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

  test("a healthy probe lists an imported resource (actor probe); an unhealthy one leaves it unlisted", async () => {
    resources.down.add("/paid/imp-5")
    expect((await probe(0)).healthy).toBe(true)
    expect((await probe(5)).healthy).toBe(false)
    const page = await listed()
    expect(page.items.map((i) => i.resource)).toEqual([itemUrl(resources.origin, 0)])
    expect((await listingChanges(0)).at(-1)).toMatchObject({ listed: 1, actor: "probe" })
    expect((await listingChanges(0)).at(-1)!.reason).toContain("first healthy probe")
    resources.down.delete("/paid/imp-5")
  })

  test("items the source no longer lists are delisted on the next pull and not probed; they wait for a probe again when they return", async () => {
    expect((await probe(15)).healthy).toBe(true)
    for (const i of [0, 5, 9, 1]) service.vanished.add(i)
    const summary = await pull()
    expect(summary.delisted).toBe(3)
    expect(summary.kept).toBe(KEPT.length - 3)
    expect((await listed()).items.map((i) => i.resource)).toEqual([itemUrl(resources.origin, 15)])
    expect((await listingChanges(0)).at(-1)).toMatchObject({
      listed: 0,
      actor: "import:fixture",
      reason: "no longer listed by source fixture"
    })
    const targets = await run(Effect.flatMap(ResourceReadsRepo, (repo) => repo.probeTargets()))
    const targetIds = new Set(targets.map((r) => r.resource.id))
    for (const i of [0, 5, 9]) expect(targetIds.has(idOf(i))).toBe(false)
    // A healthy probe does not bring back what the source dropped.
    expect((await probe(0)).healthy).toBe(true)
    expect((await listed()).items.map((i) => i.resource)).not.toContain(itemUrl(resources.origin, 0))

    service.vanished.clear()
    const back = await pull()
    expect(back).toMatchObject({ delisted: 0, added: 0, kept: KEPT.length })
    const rows = new Map((await rowsOfSource()).map((r) => [r.id, r]))
    expect(rows.get(idOf(0))).toMatchObject({ listed: false, hold: "awaiting_probe" })
    expect((await probe(0)).healthy).toBe(true)
    expect((await listed()).items.map((i) => i.resource)).toContain(itemUrl(resources.origin, 0))
  })

  test("an operator's unlisting survives healthy probes and later pulls", async () => {
    await run(
      Effect.flatMap(ResourceListingRepo, (repo) =>
        repo.setListed(idOf(15), false, { actor: "ops", reason: "curated out" })
      )
    )
    expect((await probe(15)).healthy).toBe(true)
    await pull()
    expect((await listed()).items.map((i) => i.resource)).not.toContain(itemUrl(resources.origin, 15))
    expect((await listingChanges(15)).at(-1)).toMatchObject({ listed: 0, actor: "ops" })
  })

  test("a source that fails part-way, or is not a discovery service, changes nothing", async () => {
    const before = await rowsOfSource()
    service.vanished.add(20)
    service.failFromOffset = 1000
    const failed = await run(Effect.either(Effect.flatMap(Importer, (i) => i.pull(source))))
    service.failFromOffset = null
    service.vanished.clear()
    expect(failed._tag === "Left" && failed.left.reason).toContain("offset=1000")
    expect(failed._tag === "Left" && failed.left.reason).toContain("answered 500")
    const wrong = await run(
      Effect.either(Effect.flatMap(Importer, (i) => i.pull({ id: "fixture", location: `${resources.origin}/free` })))
    )
    expect(wrong._tag === "Left" && wrong.left.reason).toContain("is not a discovery page")
    expect(await rowsOfSource()).toEqual(before)
  })

  test("the schedule pulls at start and again each intervalSeconds (TestClock)", async () => {
    const pages = await run(
      Effect.gen(function* () {
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
      }).pipe(Effect.provide(TestContext.TestContext))
    )
    expect(pages).toEqual([25, 25, 50])
  })
})
