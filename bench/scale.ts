/**
 * Probing at scale, `npm run bench:scale` (BENCH_N resources, default 100,000; several minutes).
 *
 * A SQLite file pre-filled as a 100k catalog looks after a week at the 5-minute cadence: every
 * resource with a full 24 h rolling window, raw observations for `probes.rawRetentionHours` and
 * hourly rollups for `probes.retentionDays`. Then, against a local target in its own process, one
 * phase after another (BENCH_SECONDS each, 10 s at most for step and store):
 *   capacity: Prober.runDue claiming due resources (all due: a backlog) until all were probed once
 *             or the time is up: sustained probes/s;
 *   cadence:  every resource due at its own slot of the 5-minute interval (the steady state) and
 *             the service's ProbeSchedulerLive running: the probes/s the cadence takes;
 *   step:     the prober's own step (`probeStep`: outbound guard, fetch, the official x402 decoder,
 *             classification, redaction) at the same concurrency, nothing stored;
 *   store:    EvidenceRecorder.recordObservation of made-up healthy observations, batched as the
 *             prober's are, with no request and no schedule;
 *   baseline: a bare loop at the same concurrency that fetches the target and appends each result
 *             to SQLite (WAL, synchronous = FULL) in batches of 256 per transaction.
 * During capacity and cadence, metrics reads (EvidenceReader.forResource, what
 * GET /v1/resources/{id}/metrics reads) are due every 10 ms, each timed from when it was due.
 * The prober runs step and store on one thread, so 1 / (1/step + 1/store) bounds its rate from
 * above. Prints every rate and its ratio to the baseline, the reads' p50/p99 in both phases, peak
 * RSS, and bytes on disk per resource-day. Loopback only.
 */
import { Database } from "bun:sqlite"
import { mkdtempSync, readdirSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Duration, Effect, Either, Layer, ManagedRuntime } from "effect"
import { loadConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { Prober } from "../src/verification/Prober.js"
import { ProbeSchedulerLive } from "../src/verification/ProbeScheduler.js"
import { nextDue } from "../src/verification/probeSlots.js"
import { probeStep } from "../src/verification/probeStep.js"
import { encodeWindow, windowOf } from "../src/verification/rollingWindow.js"
import { advertised, observation } from "../test/fixtures/observations.js"
import { entry, verificationStack } from "../test/fixtures/verificationStack.js"

const N = Number(process.env.BENCH_N ?? 100_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64)
const STEP_SECONDS = Math.min(SECONDS, 10)
const HOUR = 3_600_000

let peakRss = 0
const sampleRss = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100)

const target = Bun.spawn([process.execPath, join(import.meta.dir, "scaleTarget.ts")], {
  stdout: "pipe",
  stderr: "inherit"
})
const firstLine = async () => {
  const reader = target.stdout.getReader()
  let text = ""
  while (!text.includes("\n")) {
    const { value, done } = await reader.read()
    if (done) throw new Error("the target exited")
    text += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  return text.trim()
}
const origin = await firstLine()
const urlOf = (i: number) => `${origin}/paid/${i}`

const base = Either.getOrThrow(loadConfig(undefined, {}))
const folder = mkdtempSync(join(tmpdir(), "sextant-bench-scale-"))
const config = {
  ...base,
  database: join(folder, "sextant.db"),
  catalog: [],
  probes: { ...base.probes, intervalSeconds: 300, concurrency: CONCURRENCY, trustedOrigins: [origin] }
}
const ids = Array.from({ length: N }, (_, i) => ResourceId.make(`scale-${String(i).padStart(6, "0")}`))

// ---- pre-fill: the catalog through the service, the history straight into SQLite (fast) ----
const fillStart = performance.now()
const runtime = ManagedRuntime.make(verificationStack(config))
const CHUNK = 5000
for (let i = 0; i < N; i += CHUNK) {
  await runtime.runPromise(
    Effect.flatMap(CatalogWritesRepo, (repo) =>
      repo.upsertCatalog(ids.slice(i, i + CHUNK).map((id, j) => entry(id, urlOf(i + j))))
    )
  )
}
const nowMs = Date.now()
// A day at the 5-minute cadence, healthy, as the recorder keeps it between probes.
const day = Array.from({ length: 288 }, (_, k) =>
  observation(nowMs - (288 - k) * 300_000, { latencyMs: 20 + (k % 40) })
)
const windowState = encodeWindow(windowOf(day, [advertised], config.verification))
const rawKept = day.filter((o) => Date.parse(o.observedAt) >= nowMs - config.probes.rawRetentionHours * HOUR)
const hours = config.probes.retentionDays * 24
{
  const db = new Database(config.database)
  db.run("PRAGMA journal_mode = WAL")
  db.run("PRAGMA synchronous = NORMAL")
  const metrics = db.query(`INSERT INTO resource_metrics (resource_id, availability, payment_interface_success_rate,
      transaction_success_rate, p50_latency_ms, p95_latency_ms, observed_price_usd, price_consistency, reliability,
      observation_count, last_verified, last_observed_at, valid_challenge_seen, transaction_verified, window_state, updated_at)
    VALUES (?, 1, 1, 0, 39, 57, 0.001, 1, 1, 288, ?, ?, 1, 0, ?, ?)`)
  const status = db.query(`UPDATE resources SET status = 'PAYMENT_VERIFIED', verification_level = 2 WHERE id = ?`)
  const raw =
    db.query(`INSERT INTO observations (id, resource_id, observed_at, observed_at_ms, method, url, http_status,
      latency_ms, outcome, x402_version, scheme, network, asset, pay_to, amount, max_amount, price_usd, detail, contradiction)
    VALUES (?, ?, ?, ?, 'GET', ?, 402, ?, 'healthy', 2, 'exact', 'stellar:testnet', ?, ?, ?, NULL, 0.001, NULL, NULL)`)
  const rollup =
    db.query(`INSERT INTO observation_rollups (resource_id, hour_ms, probes, answered, healthy, price_matches,
      connect_failures, first_healthy_ms, latency_bins) VALUES (?, ?, 12, 12, 12, 12, 0, ?, '[20,3,31,3,45,3,58,3]')`)
  const last = day[day.length - 1]!.observedAt
  const fill = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = ids[i]!
      metrics.run(id, last, last, windowState, last)
      status.run(id)
      for (const o of rawKept)
        raw.run(
          `${o.id}_${i}`,
          id,
          o.observedAt,
          Date.parse(o.observedAt),
          urlOf(i),
          o.latencyMs,
          o.asset,
          o.payTo,
          o.amount
        )
      const firstHour = Math.floor(nowMs / HOUR) * HOUR - hours * HOUR
      for (let h = 0; h < hours; h++) rollup.run(id, firstHour + h * HOUR, firstHour + h * HOUR + 60_000)
    }
  })
  for (let i = 0; i < N; i += 1000) fill(i, Math.min(N, i + 1000))
  db.run("PRAGMA wal_checkpoint(TRUNCATE)")
  db.close()
}
const bytesOnDisk = () => readdirSync(folder).reduce((sum, f) => sum + statSync(join(folder, f)).size, 0)
const filledBytes = bytesOnDisk()
console.log(
  `pre-filled ${N} resources (${config.probes.retentionDays} days of hourly rollups, ${config.probes.rawRetentionHours} h raw, a full 24 h window each) in ${((performance.now() - fillStart) / 1000).toFixed(0)} s`
)

/**
 * Metrics reads due every 10 ms while `during` runs, each timed from when it was due, not from when
 * the event loop got to it: a read waiting behind a probe batch that holds the loop is as slow as a
 * caller would see it. Answers what `during` answered and the reads' latencies, sorted.
 */
const readsDuring = async <A>(during: () => Promise<A>) => {
  const latencies: Array<number> = []
  let running = true
  const reads = (async () => {
    const first = performance.now()
    for (let i = 0; running; i++) {
      const due = first + i * 10
      if (due > performance.now()) await Bun.sleep(due - performance.now())
      await runtime.runPromise(Effect.flatMap(EvidenceReader, (r) => r.forResource(ids[(i * 7919) % N]!)))
      latencies.push(performance.now() - due)
    }
  })()
  const result = await during()
  running = false
  await reads
  return { result, latencies: latencies.sort((a, b) => a - b) }
}

// ---- the prober at capacity (every resource due: a backlog), with metrics reads beside it ----
await runtime.runPromise(Effect.flatMap(Prober, (p) => p.syncSchedule))
const capacity = await readsDuring(async () => {
  const start = performance.now()
  let probed = 0
  while (probed < N && performance.now() - start < SECONDS * 1000) {
    probed += await runtime.runPromise(Effect.flatMap(Prober, (p) => p.runDue("bench", CONCURRENCY * 4)))
  }
  return probed / ((performance.now() - start) / 1000)
})
const proberRate = capacity.result

// ---- the 5-minute cadence: each resource due at its own slot, the service's scheduler running ----
const intervalMs = config.probes.intervalSeconds * 1000
{
  const db = new Database(config.database)
  db.run("PRAGMA busy_timeout = 5000")
  const nowMs = Date.now()
  const due = db.query(
    "UPDATE probe_schedule SET due_ms = ?, lease_owner = NULL, lease_until_ms = 0 WHERE resource_id = ?"
  )
  // Steady state: every resource's next slot from now on, so the interval's probes spread over it.
  db.transaction(() => ids.forEach((id) => due.run(nextDue(id, nowMs - intervalMs / 2, intervalMs), id)))()
  db.close()
}
const cadenceStart = Date.now()
const cadence = await readsDuring(() =>
  runtime.runPromise(
    Effect.scoped(Effect.zipRight(Layer.build(ProbeSchedulerLive), Effect.sleep(Duration.seconds(SECONDS))))
  )
)
const cadenceProbes = await runtime.runPromise(
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ n: number }>`SELECT COUNT(*) AS n FROM observations WHERE observed_at_ms >= ${cadenceStart}`
  )
)
const cadenceRate = Number(cadenceProbes[0]?.n) / ((Date.now() - cadenceStart) / 1000)
// The service's own figure: the step and store phases below race garbage out faster than a service does.
const proberPeakRss = Math.max(peakRss, process.memoryUsage().rss)

// ---- the probe's own step without the store: what bounds the ratio from above ----
const stepStart = performance.now()
const stepUntil = stepStart + STEP_SECONDS * 1000
let stepped = 0
const step = probeStep(config)
await Effect.runPromise(
  Effect.forEach(
    Array.from({ length: CONCURRENCY }),
    () =>
      Effect.whileLoop({
        while: () => performance.now() < stepUntil,
        body: () => {
          const i = stepped++ % N
          return step({ resourceId: ids[i]!, url: urlOf(i), method: "GET", advertised: [advertised] })
        },
        step: () => undefined
      }),
    { concurrency: "unbounded", discard: true }
  )
)
const stepRate = stepped / ((performance.now() - stepStart) / 1000)

// ---- the store alone: recording probes without any request, schedule left out (a lower cost than the prober's) ----
const storeStart = performance.now()
let stored = 0
await runtime.runPromise(
  Effect.gen(function* () {
    const recorder = yield* EvidenceRecorder
    const resources = yield* ResourceReadsRepo
    while (performance.now() - storeStart < STEP_SECONDS * 1000) {
      const chunk = Array.from({ length: CONCURRENCY * 4 }, (_, k) => ids[(stored + k) % N]!)
      const records = yield* resources.getMany(chunk)
      yield* Effect.forEach(
        records,
        (record) =>
          recorder.recordObservation(
            record,
            observation(Date.now(), { resourceId: record.resource.id, url: record.resource.url }),
            { listing: true }
          ),
        // Enough waiting to fill the writer's batches (256): the store's best rate, so the bound it gives is generous.
        { concurrency: CONCURRENCY * 4, discard: true }
      )
      stored += chunk.length
    }
  })
)
const storeRate = stored / ((performance.now() - storeStart) / 1000)
await runtime.dispose()

// ---- the baseline: fetch and append to SQLite in batches ----
const baselineDb = new Database(join(folder, "baseline.db"))
baselineDb.run("PRAGMA journal_mode = WAL")
baselineDb.run("PRAGMA synchronous = FULL")
baselineDb.run(
  "CREATE TABLE results (id INTEGER PRIMARY KEY, url TEXT, status INTEGER, latency_ms INTEGER, challenge TEXT, at_ms INTEGER)"
)
const append = baselineDb.query(
  "INSERT INTO results (url, status, latency_ms, challenge, at_ms) VALUES (?, ?, ?, ?, ?)"
)
const flush = baselineDb.transaction((rows: Array<[string, number, number, string | null, number]>) => {
  for (const row of rows) append.run(...row)
})
let pending: Array<[string, number, number, string | null, number]> = []
let fetched = 0
const baselineStart = performance.now()
const worker = async () => {
  while (performance.now() - baselineStart < SECONDS * 1000) {
    const url = urlOf(fetched++ % N)
    const start = performance.now()
    const response = await fetch(url, { redirect: "manual" })
    const challenge = response.headers.get("payment-required")
    await response.body?.cancel()
    pending.push([url, response.status, Math.round(performance.now() - start), challenge, Date.now()])
    if (pending.length >= 256) {
      flush(pending)
      pending = []
    }
  }
}
await Promise.all(Array.from({ length: CONCURRENCY }, worker))
flush(pending)
const baselineRate = fetched / ((performance.now() - baselineStart) / 1000)
baselineDb.close()
clearInterval(sampleRss)
target.kill()

const pct = (sorted: ReadonlyArray<number>, q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN
const readFigures = (sorted: ReadonlyArray<number>) =>
  `p50 ${pct(sorted, 0.5).toFixed(2)} ms, p99 ${pct(sorted, 0.99).toFixed(2)} ms (${sorted.length} reads, each timed from when it was due)`
const days = config.probes.retentionDays
console.log(`resources ${N}, concurrency ${CONCURRENCY}, ${SECONDS} s each`)
console.log(`prober (Prober.runDue, full window): ${proberRate.toFixed(0)} probes/s sustained`)
console.log(`baseline (fetch + append to SQLite in batches of 256): ${baselineRate.toFixed(0)} probes/s`)
console.log(`ratio prober / baseline: ${(proberRate / baselineRate).toFixed(2)}`)
console.log(
  `probe step alone (guard, request, official decoder, classification, redaction; nothing stored): ${stepRate.toFixed(0)} probes/s,` +
    ` ratio ${(stepRate / baselineRate).toFixed(2)} to the baseline`
)
console.log(
  `store alone (EvidenceRecorder batches, no request, no schedule): ${storeRate.toFixed(0)} probes/s, ratio ${(storeRate / baselineRate).toFixed(2)}`
)
// One thread runs both: a probe costs at least the step's time plus the store's.
const ceiling = 1 / (1 / stepRate + 1 / storeRate)
console.log(
  `ceiling of the prober on one thread (step + store): ${ceiling.toFixed(0)} probes/s, ratio ${(ceiling / baselineRate).toFixed(2)}`
)
console.log(`metrics reads while probing at capacity: ${readFigures(capacity.latencies)}`)
console.log(
  `at the ${config.probes.intervalSeconds / 60}-minute cadence (ProbeSchedulerLive, each resource at its own slot, ${SECONDS} s):` +
    ` ${cadenceRate.toFixed(0)} probes/s (the cadence needs ${(N / config.probes.intervalSeconds).toFixed(0)}); metrics reads ${readFigures(cadence.latencies)}`
)
console.log(
  `peak RSS (pre-fill and probing): ${(proberPeakRss / 2 ** 20).toFixed(0)} MiB; over the whole run: ${(peakRss / 2 ** 20).toFixed(0)} MiB`
)
console.log(
  `on disk: ${(filledBytes / 2 ** 30).toFixed(2)} GiB for ${N} resources x ${days} days = ${(filledBytes / (N * days)).toFixed(0)} bytes per resource-day` +
    ` (${(((filledBytes / N) * 100_000) / 2 ** 30).toFixed(2)} GiB at 100k)`
)
