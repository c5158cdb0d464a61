/**
 * `npm run bench:route`: POST /v1/routes throughput over real HTTP, over 100 and over 1,000
 * candidates (one catalog of 1,000 resources with a day of probe observations each; the first 100
 * also offer a second capability), against a bare Bun.serve handler that builds the same answer
 * from an in-memory array (the same `decideRoute` over records and evidence read once at start)
 * and JSON-serialises it, measured in the same run. Load comes from a second process on loopback
 * (this file, started with `--load`), so the client does not share the server's thread.
 *
 * Env: BENCH_RESOURCES (1000), BENCH_PROBES_PER_DAY (24), BENCH_SECONDS (3 per measurement),
 * BENCH_CONCURRENCY (16). Runtime stays bounded: seeding, then six timed runs.
 */

import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { StrKey } from "@stellar/stellar-sdk"
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../src/app.js"
import { AppConfig, type Config, loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { RecordedObservation } from "../src/domain/observations.js"
import type { CatalogEntry, ResourcePaymentOption } from "../src/domain/resources.js"
import type { RouteDecision, RouteRequest } from "../src/domain/routes.js"
import { BunServerLive, HttpLive } from "../src/http/server.js"
import { policyContext } from "../src/policy/evaluate.js"
import { decideRoute } from "../src/routing/rank.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { sortableId } from "../src/store/sortableId.js"
import { TelemetryLive } from "../src/telemetry/Telemetry.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"

interface LoadResult {
  readonly ok: number
  readonly failed: number
  readonly seconds: number
  readonly p50Ms: number
  readonly p99Ms: number
}

/** The load generator: `concurrency` keep-alive clients posting `body` for `seconds`. */
const generateLoad = async (url: string, body: string, seconds: number, concurrency: number): Promise<LoadResult> => {
  const latencies: Array<number> = []
  let failed = 0
  const start = performance.now()
  const deadline = start + seconds * 1000
  const client = async () => {
    while (performance.now() < deadline) {
      const t = performance.now()
      const response = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } })
      await response.arrayBuffer()
      if (response.status === 200) latencies.push(performance.now() - t)
      else failed++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, client))
  latencies.sort((a, b) => a - b)
  const at = (q: number) =>
    Number((latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0).toFixed(2))
  return { ok: latencies.length, failed, seconds: (performance.now() - start) / 1000, p50Ms: at(0.5), p99Ms: at(0.99) }
}

if (process.argv[2] === "--load") {
  const [url, body, seconds, concurrency] = process.argv.slice(3)
  console.log(JSON.stringify(await generateLoad(url!, body!, Number(seconds), Number(concurrency))))
  process.exit(0)
}

const RESOURCES = Number(process.env.BENCH_RESOURCES ?? 1000)
const PROBES_PER_DAY = Number(process.env.BENCH_PROBES_PER_DAY ?? 24)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const CAPABILITY = "bench.route"
/** The first 100 resources also offer this one: the 100-candidate route. */
const CAPABILITY_100 = "bench.route100"
const DAY_MS = 86_400_000

/** Runs the load generator in a child process and reads its one-line JSON report. */
const measure = async (url: string, body: string, concurrency = CONCURRENCY): Promise<LoadResult> => {
  const child = Bun.spawn(
    [process.execPath, import.meta.path, "--load", url, body, String(SECONDS), String(concurrency)],
    {
      stdout: "pipe",
      stderr: "inherit"
    }
  )
  const output = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`load generator failed for ${url}`)
  return JSON.parse(output.trim().split("\n").pop()!) as LoadResult
}

const payTo = (provider: string) => StrKey.encodeEd25519PublicKey(createHash("sha256").update(provider).digest())

/** Prices in whole base units, so `amount` and `amountUsd` agree at 7 decimals. */
const priced = (units: number): Pick<ResourcePaymentOption, "amount" | "amountUsd"> => ({
  amount: String(units),
  amountUsd: units / 1e7
})

const catalogEntry = (i: number): CatalogEntry => {
  const id = ResourceId.make(`bench-${String(i).padStart(5, "0")}`)
  const provider = `provider-${i % 50}`
  const exact: ResourcePaymentOption = {
    network: "stellar:testnet",
    scheme: "exact",
    asset: TESTNET_USDC,
    ...priced(1000 * (1 + ((i * 7) % 40))),
    payTo: payTo(provider)
  }
  const upto: ResourcePaymentOption = {
    ...exact,
    scheme: "upto",
    maxAmount: String(Number(exact.amount) * 3),
    maxAmountUsd: exact.amountUsd * 3
  }
  return {
    resource: {
      id,
      type: "http",
      name: `Bench resource ${i}`,
      description: "synthetic resource for the route benchmark",
      url: `http://127.0.0.1:9/bench/${i}`,
      method: "POST",
      capabilities: i < 100 ? [CAPABILITY, CAPABILITY_100] : [CAPABILITY]
    },
    provider: { id: provider, name: provider },
    paymentOptions: i % 5 === 0 ? [exact, upto] : [exact]
  }
}

/** Probe `n` of a day for one resource: mostly healthy, a resource-specific failure share and latency. */
const observationOf = (entry: CatalogEntry, i: number, n: number, nowMs: number): RecordedObservation => {
  const ms = nowMs - DAY_MS + Math.round(((n + 1) * DAY_MS) / PROBES_PER_DAY) - 1000
  const option = entry.paymentOptions[0]!
  const failed = (n * 31 + i) % 100 < i % 15
  const base = {
    id: sortableId("obs", ms),
    resourceId: entry.resource.id,
    observedAt: new Date(ms).toISOString(),
    method: entry.resource.method,
    url: entry.resource.url,
    detail: null,
    contradiction: null
  }
  return failed
    ? {
        ...base,
        httpStatus: null,
        latencyMs: null,
        outcome: "timeout",
        x402Version: null,
        scheme: null,
        network: null,
        asset: null,
        payTo: null,
        amount: null,
        maxAmount: null,
        priceUsd: null
      }
    : {
        ...base,
        httpStatus: 402,
        latencyMs: 40 + (i % 300) + (n % 17),
        outcome: "healthy",
        x402Version: 2,
        scheme: option.scheme,
        network: option.network,
        asset: option.asset,
        payTo: option.payTo,
        amount: option.amount,
        maxAmount: null,
        priceUsd: option.amountUsd
      }
}

const folder = mkdtempSync(join(tmpdir(), "sextant-bench-route-"))
const base = Either.getOrThrow(loadConfig(undefined, {}))
const catalog = Array.from({ length: RESOURCES }, (_, i) => catalogEntry(i))
const config: Config = {
  ...base,
  host: "127.0.0.1",
  port: 0,
  database: join(folder, "sextant.db"),
  catalog,
  vertical: { ...base.vertical, enabled: false }
}

// The server exactly as `serve` builds it (telemetry under everything, off as configured by
// default), minus the probe schedule (the evidence is seeded here), with the services kept visible
// so the seeding goes through the real recorder.
const runtime = ManagedRuntime.make(
  HttpLive.pipe(
    Layer.provideMerge(ServicesLive(config)),
    Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 })),
    Layer.provide(TelemetryLive(config, "bench"))
  )
)

try {
  const seedStart = performance.now()
  const nowMs = Date.now()
  await runtime.runPromise(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const observations = yield* ObservationsRepo
      const recorder = yield* EvidenceRecorder
      const resources = yield* ResourceReadsRepo
      // All but the last probe of the day go straight into the table; the last goes through the
      // recorder, which derives each resource's maintained metrics row and status from the window.
      yield* sql.withTransaction(
        Effect.forEach(
          catalog,
          (entry, i) =>
            observations.insert(
              Array.from({ length: PROBES_PER_DAY - 1 }, (_, n) => observationOf(entry, i, n, nowMs))
            ),
          { discard: true }
        )
      )
      const records = new Map((yield* resources.byCapability(CAPABILITY)).map((r) => [r.resource.id, r]))
      yield* Effect.forEach(
        catalog,
        (entry, i) =>
          recorder.recordObservation(
            records.get(entry.resource.id)!,
            observationOf(entry, i, PROBES_PER_DAY - 1, nowMs)
          ),
        { discard: true }
      )
    })
  )
  const seedSeconds = (performance.now() - seedStart) / 1000

  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const routeUrl = `http://127.0.0.1:${server.address.port}/v1/routes`
  const requestFor = (capability: string): RouteRequest => ({
    capability,
    constraints: { maxPricePerRequestUsd: 0.003, minProviderReliability: 0.9, networks: ["stellar:testnet"] },
    optimizeFor: "balanced"
  })

  // The baseline: the same decision over the same records and evidence, held in memory, serialised
  // with JSON.stringify by a bare Bun handler. What Sextant adds on top is the store read, the
  // HTTP framework, request validation and its middleware.
  const { candidates, config: appConfig } = await runtime.runPromise(
    Effect.gen(function* () {
      const reader = yield* EvidenceReader
      return {
        candidates: new Map([
          [CAPABILITY, (yield* reader.forCapability(CAPABILITY)).candidates],
          [CAPABILITY_100, (yield* reader.forCapability(CAPABILITY_100)).candidates]
        ]),
        config: yield* AppConfig
      }
    })
  )
  const inMemory = new Map(
    [...candidates].map(([capability, found]) => [
      capability,
      { catalog: found.map((c) => c.record), evidence: new Map(found.map((c) => [c.record.resource.id, c.evidence])) }
    ])
  )
  const bare = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      const request = (await req.json()) as RouteRequest
      const { catalog, evidence } = inMemory.get(request.capability)!
      const now = new Date()
      const decision = decideRoute({
        request,
        catalog,
        evidence,
        context: policyContext(appConfig, now),
        metricsSnapshotAt: now.toISOString()
      })
      return new Response(JSON.stringify(decision), { headers: { "content-type": "application/json" } })
    }
  })
  const bareUrl = `http://127.0.0.1:${bare.port}/`

  const rps = (r: LoadResult) => r.ok / r.seconds
  const line = (name: string, r: LoadResult) =>
    `${name.padEnd(44)} ${rps(r).toFixed(1).padStart(9)} req/s   p50 ${String(r.p50Ms).padStart(8)} ms   p99 ${String(r.p99Ms).padStart(8)} ms   failed ${r.failed}`
  console.log(
    `catalog: ${RESOURCES} resources, ${RESOURCES * PROBES_PER_DAY} observations over 24 h (${PROBES_PER_DAY} each), seeded in ${seedSeconds.toFixed(1)} s; ` +
      `load: ${CONCURRENCY} clients for ${SECONDS} s from a second process`
  )
  let failed = 0
  for (const capability of [CAPABILITY_100, CAPABILITY]) {
    const body = JSON.stringify(requestFor(capability))
    const first = await fetch(routeUrl, { method: "POST", body, headers: { "content-type": "application/json" } })
    const answer = await first.text()
    const decision = JSON.parse(answer) as RouteDecision
    if (first.status !== 200 || decision.selected === null)
      throw new Error(`the route did not select anything: ${answer.slice(0, 300)}`)
    const size = (inMemory.get(capability)?.catalog.length ?? 0).toLocaleString("en")
    const alone = await measure(routeUrl, body, 1)
    const route = await measure(routeUrl, body)
    const baseline = await measure(bareUrl, body)
    failed += alone.failed + route.failed
    console.log(
      `\n${size} candidates: ${decision.fallbacks.length + 1 + (decision.omitted?.fallbacks ?? 0)} ranked, ` +
        `${decision.rejected.length + (decision.omitted?.rejected ?? 0)} rejected; answer ${(answer.length / 1024).toFixed(1)} KiB ` +
        `(${decision.fallbacks.length} fallbacks and ${decision.rejected.length} rejections shown)`
    )
    console.log(line("POST /v1/routes, one client alone", alone))
    console.log(line("POST /v1/routes (sextant)", route))
    console.log(line("bare handler, same answer from memory", baseline))
    console.log(`ratio routes / bare (${size} candidates): ${(rps(route) / rps(baseline)).toFixed(3)}`)
  }
  bare.stop(true)
  if (failed > 0) process.exitCode = 1
} finally {
  await runtime.dispose()
  rmSync(folder, { recursive: true, force: true })
}
