/**
 * `npm run bench:search`: paginated text search over a catalog of 100,000 listed resources
 * (BENCH_RESOURCES), through the HTTP API on loopback: the first page and a later page (by
 * nextCursor) of several queries, one client, p50 and p99 of each. The baseline, run beside it:
 * the in-memory ranking rule (`discovery/search.ts`, what every search cost before the index)
 * over the same records, for the same first page.
 *
 * Env: BENCH_RESOURCES (100000), BENCH_REQUESTS (60 per query and page).
 */

import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../src/app.js"
import { type Config, loadConfig } from "../src/config.js"
import { search } from "../src/discovery/search.js"
import { emptyMetrics } from "../src/domain/metrics.js"
import { BunServerLive, HttpLive } from "../src/http/server.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { syntheticCatalog } from "./support/syntheticCatalog.js"

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 100_000)
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 60)
const PAGE = 20
const QUERIES = [
  { query: "compliance audit", note: "two terms, 1 in 20 resources" },
  { query: "data", note: "a common word, 1 in 3" },
  { query: "insp", note: "a prefix, 1 in 10" },
  { query: "oracle forecast 4217", note: "three terms, one very rare" }
]

const percentile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const timed = async (n: number, run: () => Promise<unknown>) => {
  const samples: Array<number> = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await run()
    samples.push(performance.now() - t)
  }
  samples.sort((a, b) => a - b)
  return { p50: percentile(samples, 0.5), p99: percentile(samples, 0.99) }
}

const folder = mkdtempSync(join(tmpdir(), "sextant-bench-search-"))
const database = join(folder, "sextant.db")
const catalog = syntheticCatalog(RESOURCES)
const base = Either.getOrThrow(loadConfig(undefined, {}))
// An empty configured catalog: the resources are written once below, as an import would.
const config: Config = {
  ...base,
  host: "127.0.0.1",
  port: 0,
  database,
  catalog: [],
  vertical: { ...base.vertical, enabled: false }
}

const loadStart = performance.now()
const store = ManagedRuntime.make(StoreLive(database))
await store.runPromise(
  Effect.flatMap(CatalogWritesRepo, (repo) =>
    repo.upsertImported(catalog, "import:bench", { actor: "bench", reason: "seed" })
  )
)
await store.runPromise(Effect.flatMap(CatalogWritesRepo, (repo) => repo.bySource("import:bench")).pipe(Effect.asVoid))
await store.dispose()
// Imported entries wait for a probe; list them all at once, as healthy probes would.
const { Database } = await import("bun:sqlite")
const raw = new Database(database)
raw.run("UPDATE resources SET listed = 1, listing_hold = NULL")
raw.close()
const loadSeconds = (performance.now() - loadStart) / 1000

const runtime = ManagedRuntime.make(
  HttpLive.pipe(Layer.provide(ServicesLive(config)), Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 })))
)
try {
  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const url = `http://127.0.0.1:${server.address.port}/v1/search`
  const post = async (body: unknown) => {
    const response = await fetch(url, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" }
    })
    if (response.status !== 200) throw new Error(`search answered ${response.status}: ${await response.text()}`)
    return (await response.json()) as { resources: Array<unknown>; nextCursor: string | null }
  }
  const records = catalog.map((e) => ({
    record: {
      ...e,
      resource: { ...e.resource, status: "DISCOVERED" as const, verificationLevel: 0 },
      listing: { listed: true, source: "import:bench", trusted: false }
    },
    metrics: emptyMetrics(e.resource.id)
  }))
  console.log(
    `catalog: ${RESOURCES.toLocaleString("en")} listed resources, written in ${loadSeconds.toFixed(1)} s; pages of ${PAGE}, one client, ${REQUESTS} requests each`
  )
  const firstPages: Array<number> = []
  for (const { query, note } of QUERIES) {
    const first = await post({ query, limit: PAGE })
    // A page deep in the answer: follow nextCursor five times.
    let cursor = first.nextCursor
    for (let i = 0; i < 4 && cursor !== null; i++) cursor = (await post({ query, limit: PAGE, cursor })).nextCursor
    const firstPage = await timed(REQUESTS, () => post({ query, limit: PAGE }))
    const laterPage = cursor === null ? null : await timed(REQUESTS, () => post({ query, limit: PAGE, cursor }))
    const inMemory = await timed(Math.max(3, Math.floor(REQUESTS / 10)), async () =>
      search(records, { query }).slice(0, PAGE)
    )
    firstPages.push(firstPage.p50)
    console.log(
      `"${query}" (${note}): first page p50 ${firstPage.p50.toFixed(2)} ms p99 ${firstPage.p99.toFixed(2)} ms; ` +
        (laterPage
          ? `6th page p50 ${laterPage.p50.toFixed(2)} ms p99 ${laterPage.p99.toFixed(2)} ms; `
          : "one page only; ") +
        `in-memory rule p50 ${inMemory.p50.toFixed(1)} ms; ratio in-memory / indexed ${(inMemory.p50 / firstPage.p50).toFixed(1)}`
    )
  }
  firstPages.sort((a, b) => a - b)
  console.log(`median of the queries' first-page p50: ${percentile(firstPages, 0.5).toFixed(2)} ms`)
} finally {
  await runtime.dispose()
  rmSync(folder, { recursive: true, force: true })
}
