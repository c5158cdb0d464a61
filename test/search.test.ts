/**
 * The paged search (the store's text index and catalog filters, then the quality filters) answers
 * exactly what the in-memory ranking rule of `discovery/search.ts` answers over the same catalog:
 * the same resources, in the same order, with the same relevance, page after page, on SQLite
 * (FTS5) and, when a PostgreSQL server is installed, on Postgres (tsvector).
 */
import { afterAll, describe, expect } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Runtime } from "effect"
import fc from "fast-check"
import { AppConfig, loadConfig, TESTNET_USDC } from "../src/config.js"
import { Discovery } from "../src/discovery/Discovery.js"
import { search } from "../src/discovery/search.js"
import { ResourceId } from "../src/domain/ids.js"
import { emptyMetrics } from "../src/domain/metrics.js"
import type { CatalogEntry, ResourcePaymentOption, ResourceSearchRequest } from "../src/domain/resources.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { SearchTuning } from "../src/store/searchIndex.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { it } from "./support/effectTest.js"
import { fcSeed } from "./support/fcSeed.js"
import { type PostgresCluster, startPostgres } from "./support/postgres.js"

const PAY_TO = "GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5"
/** Words that are prefixes of one another, so exact and prefix hits compete within and across fields. */
const WORDS = ["inspect", "inspector", "insp", "ledger", "led", "rwa", "data", "dat", "compliance", "x402", "x4"]
const CAPABILITIES = ["rwa.inspect", "ledger.read", "data.feed", "compliance.check"]

const optionArb: fc.Arbitrary<ResourcePaymentOption> = fc
  .record({
    scheme: fc.constantFrom("exact" as const, "upto" as const),
    network: fc.constantFrom("stellar:testnet" as const, "stellar:pubnet" as const),
    units: fc.integer({ min: 1, max: 40 }),
    ceiling: fc.integer({ min: 1, max: 3 })
  })
  .map(({ scheme, network, units, ceiling }) => ({
    network,
    scheme,
    asset: TESTNET_USDC,
    amount: String(units * 1000),
    amountUsd: (units * 1000) / 1e7,
    ...(scheme === "upto"
      ? { maxAmount: String(units * 1000 * ceiling), maxAmountUsd: (units * 1000 * ceiling) / 1e7 }
      : {}),
    payTo: PAY_TO
  }))

const text = (max: number) =>
  fc
    .array(fc.constantFrom(...WORDS, "plain", "Inspect-LEDGER!"), { minLength: 1, maxLength: max })
    .map((w) => w.join(" "))

const catalogArb = fc
  .array(
    fc.record({
      name: text(3),
      description: text(6),
      capabilities: fc.subarray(CAPABILITIES, { maxLength: 2 }),
      options: fc.array(optionArb, { minLength: 1, maxLength: 2 })
    }),
    { minLength: 5, maxLength: 40 }
  )
  .map((rows) =>
    rows.map(
      (r, i): CatalogEntry => ({
        resource: {
          id: ResourceId.make(`s${String(i).padStart(2, "0")}`),
          type: "http",
          name: r.name,
          description: r.description,
          url: `http://127.0.0.1:9/s/${i}`,
          method: "GET",
          capabilities: r.capabilities
        },
        provider: { id: "p", name: "provider" },
        paymentOptions: r.options
      })
    )
  )

/** Each filter now and then (`freq`: absent 3 times in 4), so many cases match enough to span pages. */
const sometimes = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { freq: 4, nil: undefined }).map((a) => a)
const requestArb: fc.Arbitrary<ResourceSearchRequest> = fc
  .record({
    query: fc.option(
      fc.array(fc.constantFrom(...WORDS, "i", "d", "zzz", "LED", "  ", "-"), { maxLength: 3 }).map((w) => w.join(" ")),
      {
        freq: 5,
        nil: undefined
      }
    ),
    capability: sometimes(fc.constantFrom(...CAPABILITIES)),
    scheme: sometimes(fc.constantFrom("exact" as const, "upto" as const)),
    network: sometimes(fc.constantFrom("stellar:testnet" as const, "stellar:pubnet" as const)),
    maxPriceUsd: sometimes(fc.constantFrom(0.0005, 0.001, 0.002, 0.005))
  })
  .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)) as ResourceSearchRequest)

/** The store (read with `tuning`) and discovery over it. */
const harness = (database: string, tuning: typeof SearchTuning.Service = SearchTuning.defaultValue()) =>
  Discovery.Live.pipe(
    Layer.provideMerge(EvidenceReader.Live),
    Layer.provideMerge(StoreLive(database).pipe(Layer.provide(Layer.succeed(SearchTuning, tuning)))),
    Layer.provideMerge(Layer.succeed(AppConfig, { ...Either.getOrThrow(loadConfig(undefined, {})), database }))
  )
type Harness = Layer.Layer.Success<ReturnType<typeof harness>>

/** Every page of the search, `limit` at a time, following nextCursor, over a store emptied and given `catalog`. */
const pages = (catalog: ReadonlyArray<CatalogEntry>, request: ResourceSearchRequest, limit: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`DELETE FROM resources`
    yield* (yield* CatalogWritesRepo).upsertCatalog(catalog)
    const discovery = yield* Discovery
    const hits: Array<{ id: string; relevance: number }> = []
    let cursor: string | undefined
    for (let page = 0; page <= catalog.length + 1; page++) {
      const answer = yield* discovery.search({ ...request, limit, ...(cursor ? { cursor } : {}) })
      expect(answer.count).toBe(answer.resources.length)
      expect(answer.resources.length).toBeLessThanOrEqual(limit)
      hits.push(...answer.resources.map((r) => ({ id: r.resource.id, relevance: r.relevance })))
      if (answer.nextCursor === null) return hits
      cursor = answer.nextCursor
    }
    throw new Error("the cursor never reached the last page")
  })

const expected = (catalog: ReadonlyArray<CatalogEntry>, request: ResourceSearchRequest) =>
  search(
    catalog.map((e) => ({
      record: {
        ...e,
        resource: { ...e.resource, status: "DISCOVERED", verificationLevel: 0 },
        listing: { listed: true, source: "config", trusted: true }
      },
      metrics: emptyMetrics(e.resource.id)
    })),
    request
  ).map((h) => ({ id: h.record.resource.id, relevance: h.relevance }))

/** The property over `runs` cases; fast-check awaits each case, so a case runs on the harness's own runtime. */
const property = (runs: number) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<Harness>()
    let multiPage = 0
    yield* Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(catalogArb, requestArb, fc.integer({ min: 1, max: 4 }), async (catalog, request, limit) => {
          const want = expected(catalog, request)
          expect(await Runtime.runPromise(runtime)(pages(catalog, request, limit))).toEqual(want)
          if (want.length > limit) multiPage++
        }),
        { numRuns: runs, seed: fcSeed }
      )
    )
    // The cases must exercise cursors, not only empty or single-page answers.
    expect(multiPage).toBeGreaterThan(runs / 8)
  })

/** A resource of the band cases: only the text varies. */
const entry = (id: string, name: string, capabilities: ReadonlyArray<string>, description: string): CatalogEntry => ({
  resource: {
    id: ResourceId.make(id),
    type: "http",
    name,
    description,
    url: `http://127.0.0.1:9/${id}`,
    method: "GET",
    capabilities
  },
  provider: { id: "p", name: "provider" },
  paymentOptions: [
    {
      network: "stellar:testnet",
      scheme: "exact",
      asset: TESTNET_USDC,
      amount: "1000",
      amountUsd: 0.0001,
      payTo: PAY_TO
    }
  ]
})

describe("relevance bands", () => {
  // Ids run against relevance, so id order alone would put the description hit first.
  const catalog = [
    entry("a0", "plain", [], "a ledger feed"),
    entry("a1", "plain", ["ledgers.read"], "plain"),
    entry("a2", "ledgers", [], "plain"),
    entry("a3", "plain", ["ledger.read"], "ledger"),
    entry("a4", "ledger", [], "plain"),
    entry("a5", "Ledger", ["ledger.read"], "ledger"),
    entry("a6", "plain", [], "ledgerless")
  ]
  const order = [
    { id: "a4", relevance: 3 },
    { id: "a5", relevance: 3 },
    { id: "a3", relevance: 2 },
    { id: "a2", relevance: 1.5 },
    { id: "a0", relevance: 1 },
    { id: "a1", relevance: 1 },
    { id: "a6", relevance: 0.5 }
  ]
  for (const [label, tuning] of [
    ["ranked from the index", SearchTuning.defaultValue()],
    ["read in id order", { denseBand: 1, scanBudget: 1, bandTerms: 3, listedTokens: 16 }]
  ] as const)
    it.live(
      `a description hit comes after name hits, ties go by id, and a cursor inside a band resumes there (${label})`,
      () =>
        Effect.gen(function* () {
          // Pages of one and of two: cursors land inside the bands of 3 and of 1, and at their edges.
          expect(yield* pages(catalog, { query: "ledger" }, 1)).toEqual(order)
          expect(yield* pages(catalog, { query: "ledger" }, 2)).toEqual(order)
          expect(yield* pages(catalog, { query: "ledger", capability: "ledger.read" }, 1)).toEqual(order.slice(1, 3))
        }).pipe(Effect.provide(harness(":memory:", tuning)))
    )
})

describe("paged search equals the ranking rule", () => {
  it.live("on SQLite (FTS5), page by page", () => property(150).pipe(Effect.provide(harness(":memory:"))), 120_000)

  // With a few resources every band is small and ranked from the index; these tunings take the
  // other paths: every band read in id order (the scan budget spent after two resources, then
  // the index), a scan that sees the whole catalog with every prefix queried as a prefix, and one
  // statement for multi-term queries.
  for (const [label, tuning] of [
    ["bands read in id order, budget of 2", { denseBand: 1, scanBudget: 2, bandTerms: 3, listedTokens: 16 }],
    ["bands read in id order, whole catalog", { denseBand: 1, scanBudget: 1000, bandTerms: 3, listedTokens: 0 }],
    ["one statement beyond one term", { denseBand: 1000, scanBudget: 4000, bandTerms: 1, listedTokens: 16 }]
  ] as const)
    it.live(`on SQLite, ${label}`, () => property(60).pipe(Effect.provide(harness(":memory:", tuning))), 120_000)

  let cluster: PostgresCluster | undefined
  afterAll(async () => {
    await cluster?.stop()
  })
  it.live(
    "on Postgres (tsvector), page by page",
    () =>
      Effect.gen(function* () {
        cluster = yield* Effect.promise(() => startPostgres())
        const database = yield* Effect.promise(() => cluster!.createDatabase("search"))
        yield* property(40).pipe(Effect.provide(harness(database)))
      }),
    120_000
  )
})
