/**
 * `npm run bench:preflight`: POST /v1/preflight at 100,000 resources while the probe schedule
 * runs at its 5-minute cadence in the same process, against a bare Bun.serve handler that judges
 * the same payment with the same `preflightVerdict` over records and evidence held in memory, also
 * while probing, measured in the same run. Each request names a random resource's URL and the
 * option its challenge offers (the fixture's payee and price), so reads spread over the whole
 * store. One client is also measured before probing starts, as a reference. Load comes from a second process on loopback (this file, `--load`). The probe target is
 * bench/scaleTarget.ts in its own process: every path answers a real x402 challenge.
 *
 * Env: BENCH_N (100000), BENCH_SECONDS (10 per measurement), BENCH_CONCURRENCY (4).
 */
import { Database } from "bun:sqlite"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { Effect, Either, Fiber, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../src/app.js"
import { type Config, loadConfig, TESTNET_USDC } from "../src/config.js"
import { noEvidence, type PayeeEvidence } from "../src/domain/evidence.js"
import { ResourceId } from "../src/domain/ids.js"
import type { PreflightRequest } from "../src/domain/preflight.js"
import { BunServerLive, HttpLive } from "../src/http/server.js"
import { policyContext } from "../src/policy/evaluate.js"
import { ENTRIES_READ } from "../src/preflight/Preflight.js"
import { evidenceOf, preflightVerdict } from "../src/preflight/verdict.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { TelemetryLive } from "../src/telemetry/Telemetry.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { Prober } from "../src/verification/Prober.js"
import { ProbeSchedulerLive } from "../src/verification/ProbeScheduler.js"
import { nextDue } from "../src/verification/probeSlots.js"
import { encodeWindow, windowOf } from "../src/verification/rollingWindow.js"
import { advertised, observation } from "../test/fixtures/observations.js"
import { entry } from "../test/fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "../test/fixtures/x402Terms.js"

interface LoadResult {
  readonly ok: number
  readonly failed: number
  readonly seconds: number
  readonly p50Ms: number
  readonly p99Ms: number
}

const requestFor = (origin: string, i: number): PreflightRequest => ({
  url: `${origin}/paid/${i}`,
  requirements: {
    scheme: "exact",
    network: "stellar:testnet",
    asset: TESTNET_USDC,
    amount: FIXTURE_AMOUNT,
    payTo: FIXTURE_PAY_TO,
    maxTimeoutSeconds: 60
  }
})

/** The load generator: `concurrency` keep-alive clients, each request for a random one of `n` resources. */
const generateLoad = async (
  url: string,
  origin: string,
  n: number,
  seconds: number,
  concurrency: number
): Promise<LoadResult> => {
  const latencies: Array<number> = []
  let failed = 0
  const start = performance.now()
  const deadline = start + seconds * 1000
  const client = async () => {
    while (performance.now() < deadline) {
      const body = JSON.stringify(requestFor(origin, Math.floor(Math.random() * n)))
      const t = performance.now()
      const response = await fetch(url, { method: "POST", body, headers: { "content-type": "application/json" } })
      const answer = (await response.json()) as { verdict?: string }
      if (response.status === 200 && answer.verdict === "ALLOW") latencies.push(performance.now() - t)
      else failed++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, client))
  latencies.sort((a, b) => a - b)
  const at = (q: number) =>
    Number((latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)] ?? 0).toFixed(2))
  return { ok: latencies.length, failed, seconds: (performance.now() - start) / 1000, p50Ms: at(0.5), p99Ms: at(0.99) }
}

if (process.argv[2] === "--load") {
  const [url, origin, n, seconds, concurrency] = process.argv.slice(3)
  console.log(JSON.stringify(await generateLoad(url!, origin!, Number(n), Number(seconds), Number(concurrency))))
  process.exit(0)
}

const N = Number(process.env.BENCH_N ?? 100_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4)

const target = Bun.spawn([process.execPath, join(import.meta.dir, "scaleTarget.ts")], {
  stdout: "pipe",
  stderr: "inherit"
})
const origin = await (async () => {
  const reader = target.stdout.getReader()
  let text = ""
  while (!text.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error("the target exited")
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return text.trim()
})()

const measure = async (url: string, concurrency = CONCURRENCY): Promise<LoadResult> => {
  const child = Bun.spawn(
    [process.execPath, import.meta.path, "--load", url, origin, String(N), String(SECONDS), String(concurrency)],
    {
      stdout: "pipe",
      stderr: "inherit"
    }
  )
  const output = await new Response(child.stdout).text()
  if ((await child.exited) !== 0) throw new Error(`load generator failed for ${url}`)
  return JSON.parse(output.trim().split("\n").pop()!) as LoadResult
}

const base = Either.getOrThrow(loadConfig(undefined, {}))
const folder = mkdtempSync(join(tmpdir(), "sextant-bench-preflight-"))
const ids = Array.from({ length: N }, (_, i) => ResourceId.make(`pf-${String(i).padStart(6, "0")}`))
const config: Config = {
  ...base,
  host: "127.0.0.1",
  port: 0,
  database: join(folder, "sextant.db"),
  catalog: ids.map((id, i) => entry(id, `${origin}/paid/${i}`)),
  vertical: { ...base.vertical, enabled: false },
  demo: { ...base.demo, enabled: false },
  probes: { ...base.probes, intervalSeconds: 300, concurrency: 64, trustedOrigins: [origin] }
}

const runtime = ManagedRuntime.make(
  HttpLive.pipe(
    Layer.provideMerge(ServicesLive(config)),
    Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 })),
    Layer.provide(TelemetryLive(config, "bench"))
  )
)

try {
  const fillStart = performance.now()
  const server = await runtime.runPromise(HttpServer.HttpServer)
  if (server.address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const preflightUrl = `http://127.0.0.1:${server.address.port}/v1/preflight`

  // Every resource with a full day at the cadence, as the recorder keeps it between probes
  // (bench/scale.ts fills the same way), then each due at its own slot of the interval.
  const nowMs = Date.now()
  const day = Array.from({ length: 288 }, (_, k) =>
    observation(nowMs - (288 - k) * 300_000, { latencyMs: 20 + (k % 40) })
  )
  const windowState = encodeWindow(windowOf(day, [advertised], config.verification))
  {
    const db = new Database(config.database)
    db.run("PRAGMA busy_timeout = 5000")
    const metrics =
      db.query(`INSERT OR REPLACE INTO resource_metrics (resource_id, availability, payment_interface_success_rate,
        transaction_success_rate, p50_latency_ms, p95_latency_ms, observed_price_usd, price_consistency, reliability,
        observation_count, last_verified, last_observed_at, valid_challenge_seen, transaction_verified, window_state, updated_at)
      VALUES (?, 1, 1, 0, 39, 57, 0.001, 1, 1, 288, ?, ?, 1, 0, ?, ?)`)
    const status = db.query(`UPDATE resources SET status = 'PAYMENT_VERIFIED', verification_level = 2 WHERE id = ?`)
    const last = day[day.length - 1]!.observedAt
    db.transaction(() => {
      for (const id of ids) {
        metrics.run(id, last, last, windowState, last)
        status.run(id)
      }
    })()
    db.close()
  }
  await runtime.runPromise(Effect.flatMap(Prober, (p) => p.syncSchedule))
  {
    const db = new Database(config.database)
    db.run("PRAGMA busy_timeout = 5000")
    const intervalMs = config.probes.intervalSeconds * 1000
    const due = db.query(
      "UPDATE probe_schedule SET due_ms = ?, lease_owner = NULL, lease_until_ms = 0 WHERE resource_id = ?"
    )
    const at = Date.now()
    db.transaction(() => ids.forEach((id) => due.run(nextDue(id, at - intervalMs / 2, intervalMs), id)))()
    db.close()
  }

  // The baseline's memory: every record and its evidence, and the origin's first entries by id.
  const held = await runtime.runPromise(
    Effect.gen(function* () {
      const repo = yield* ResourceReadsRepo
      const reader = yield* EvidenceReader
      const byUrl = new Map<string, PayeeEvidence>()
      for (let i = 0; i < N; i += 5000) {
        const records = yield* repo.getMany(ids.slice(i, i + 5000))
        const found = yield* reader.forResources(records.map((r) => r.resource.id))
        for (const record of records)
          byUrl.set(record.resource.url, {
            record,
            evidence: found.get(record.resource.id) ?? noEvidence(record.resource.id)
          })
      }
      return byUrl
    })
  )
  const originFirst = ids.slice(0, ENTRIES_READ + 1).map((_, i) => held.get(`${origin}/paid/${i}`)!)
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  const bare = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      const request = (await req.json()) as PreflightRequest
      const at = held.get(request.url!)
      const atUrl = at === undefined ? [] : [at]
      const atOrigin = originFirst.filter((e) => e !== at).slice(0, ENTRIES_READ)
      const r = request.requirements!
      const option = {
        optionIndex: null,
        scheme: r.scheme,
        network: r.network,
        asset: r.asset,
        payTo: r.payTo,
        amount: r.amount,
        maxAmount: null,
        amountUsd: Number(r.amount) / 1e7
      }
      const now = new Date()
      const context = { ...policyContext(config, now), deployment, priceTolerance: config.probes.priceTolerance }
      const verdict = preflightVerdict({ option, atUrl, atOrigin, policy: {}, context })
      const { maxAmount: _, ...judged } = option
      const answer = {
        ...verdict,
        url: request.url,
        origin,
        judged,
        evidence: evidenceOf(atUrl, atOrigin),
        evaluatedAt: now.toISOString()
      }
      return new Response(JSON.stringify(answer), { headers: { "content-type": "application/json" } })
    }
  })
  const bareUrl = `http://127.0.0.1:${bare.port}/`
  console.log(
    `${N.toLocaleString("en")} resources on one origin, served, filled and held in ${((performance.now() - fillStart) / 1000).toFixed(0)} s`
  )

  // What one request costs with nothing else running: the reference for what probing adds.
  const quiet = await measure(preflightUrl, 1)
  // The probe schedule at its cadence for as long as the measurements run.
  const probing = runtime.runFork(Effect.scoped(Effect.zipRight(Layer.build(ProbeSchedulerLive), Effect.never)))
  await Bun.sleep(2000)
  const started = Date.now()
  const alone = await measure(preflightUrl, 1)
  const loaded = await measure(preflightUrl)
  const baseline = await measure(bareUrl)
  const seconds = (Date.now() - started) / 1000
  const counted = (() => {
    const db = new Database(config.database, { readonly: true })
    const row = db
      .query<{ n: number }, [number]>("SELECT COUNT(*) AS n FROM observations WHERE observed_at_ms >= ?")
      .get(started)
    db.close()
    return row?.n ?? 0
  })()
  await runtime.runPromise(Fiber.interrupt(probing))
  bare.stop(true)

  const rps = (r: LoadResult) => r.ok / r.seconds
  const line = (name: string, r: LoadResult) =>
    `${name.padEnd(52)} ${rps(r).toFixed(1).padStart(8)} req/s   p50 ${String(r.p50Ms).padStart(7)} ms   p99 ${String(r.p99Ms).padStart(7)} ms   failed ${r.failed}`
  console.log(
    `probing during the measurements: ${(counted / seconds).toFixed(0)} probes/s (the cadence needs ${(N / config.probes.intervalSeconds).toFixed(0)})`
  )
  console.log(line("POST /v1/preflight, one client, no probing", quiet))
  console.log(line("POST /v1/preflight, one client", alone))
  console.log(line(`POST /v1/preflight, ${CONCURRENCY} clients`, loaded))
  console.log(line(`bare handler from memory, ${CONCURRENCY} clients`, baseline))
  console.log(
    `ratio preflight / bare: throughput ${(rps(loaded) / rps(baseline)).toFixed(3)}, p99 ${(loaded.p99Ms / baseline.p99Ms).toFixed(2)}x`
  )
  console.log(
    `target p99 under 100 ms at ${N.toLocaleString("en")} resources while probing: ${Math.max(alone.p99Ms, loaded.p99Ms) < 100 ? "met" : "missed"}`
  )
  if (alone.failed + loaded.failed + baseline.failed > 0) process.exitCode = 1
} finally {
  await runtime.dispose()
  target.kill()
  rmSync(folder, { recursive: true, force: true })
}
