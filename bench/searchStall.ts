/**
 * `npm run bench:search:stall`: does a search hold the request thread? A catalog of 100,000 listed
 * resources (BENCH_RESOURCES) in a SQLite file, served over HTTP on loopback; `/health/live` is
 * asked 10 ms after each answer (timed from when it was due), first idle (the baseline, same run), then while the worst searches the query
 * bounds admit run one after another (eight distinct three-letter prefixes of common words:
 * `POST /v1/search` ranked, the same with a quality filter nothing passes, and
 * `GET /x402/discovery/search`). Prints each search's duration and the health answers' p50, p99
 * and slowest in both phases, and the ratio of the slowest to the baseline's.
 *
 * Env: BENCH_RESOURCES (100000), BENCH_ROUNDS (3 rounds of the three searches).
 */

import { Database } from "bun:sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../src/app.js"
import { type Config, loadConfig } from "../src/config.js"
import { BunServerLive, HttpLive } from "../src/http/server.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { syntheticCatalog } from "./support/syntheticCatalog.js"

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 100_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const WORST = "dat ser api sta fas num age for"

const percentile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
const summary = (samples: Array<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    n: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? 0
  }
}
const fmt = (s: ReturnType<typeof summary>) =>
  `n=${s.n} p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms, slowest ${s.max.toFixed(1)} ms`

const folder = mkdtempSync(join(tmpdir(), "sextant-bench-stall-"))
const database = join(folder, "sextant.db")
const base = Either.getOrThrow(loadConfig(undefined, {}))
const config: Config = {
  ...base,
  host: "127.0.0.1",
  port: 0,
  database,
  catalog: [],
  vertical: { ...base.vertical, enabled: false }
}

const store = ManagedRuntime.make(StoreLive(database))
await store.runPromise(
  Effect.flatMap(CatalogWritesRepo, (repo) =>
    repo.upsertImported(syntheticCatalog(RESOURCES), "import:bench", { actor: "bench", reason: "seed" })
  )
)
await store.dispose()
const raw = new Database(database)
raw.run("UPDATE resources SET listed = 1, listing_hold = NULL")
raw.close()

const runtime = ManagedRuntime.make(
  HttpLive.pipe(Layer.provide(ServicesLive(config)), Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 })))
)
try {
  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const url = `http://127.0.0.1:${server.address.port}`
  const healthWhile = async (work: Promise<unknown>) => {
    let done = false
    void work.finally(() => (done = true))
    const samples: Array<number> = []
    // Timed from when each was due (10 ms after the last answer): this process serves too, so a
    // held thread delays the asking as well as the answer.
    let due = performance.now()
    while (!done) {
      await (await fetch(`${url}/health/live`)).arrayBuffer()
      const answered = performance.now()
      samples.push(answered - due)
      due = answered + 10
      await Bun.sleep(10)
    }
    await work
    return samples
  }
  const timed = async (label: string, run: () => Promise<Response>, durations: Map<string, Array<number>>) => {
    const started = performance.now()
    const answer = await run()
    if (answer.status !== 200) throw new Error(`${label} answered ${answer.status}: ${await answer.text()}`)
    await answer.arrayBuffer()
    durations.set(label, [...(durations.get(label) ?? []), performance.now() - started])
  }
  const post = (body: unknown) => () =>
    fetch(`${url}/v1/search`, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" }
    })
  // Warm: the first search starts the search thread.
  await post({ query: "data", limit: 1 })()
  const idle = await healthWhile(Bun.sleep(3000))
  const durations = new Map<string, Array<number>>()
  const busy = await healthWhile(
    (async () => {
      for (let round = 0; round < ROUNDS; round++) {
        await timed("POST /v1/search, 8 prefixes, limit 20", post({ query: WORST, limit: 20 }), durations)
        await timed(
          "POST /v1/search, 8 prefixes, minimumReliability 1",
          post({ query: WORST, minimumReliability: 1 }),
          durations
        )
        await timed(
          "GET /x402/discovery/search, 8 prefixes, limit 20",
          () => fetch(`${url}/x402/discovery/search?query=${encodeURIComponent(WORST)}&limit=20`),
          durations
        )
      }
    })()
  )
  console.log(`catalog: ${RESOURCES} listed resources; ${ROUNDS} rounds`)
  for (const [label, samples] of durations) console.log(`  ${label}: ${fmt(summary(samples))}`)
  const idleSummary = summary(idle)
  const busySummary = summary(busy)
  console.log(`/health/live idle:            ${fmt(idleSummary)}`)
  console.log(`/health/live during searches: ${fmt(busySummary)}`)
  console.log(`slowest during / slowest idle: ${(busySummary.max / Math.max(idleSummary.max, 0.001)).toFixed(2)}`)
} finally {
  await runtime.dispose()
  rmSync(folder, { recursive: true, force: true })
}
