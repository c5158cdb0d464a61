/**
 * Probe throughput, `bun bench/probe.ts` (about 15 s).
 *
 * Against the local x402 fixture server (real challenges from @x402/core + @x402/stellar), at the
 * same concurrency:
 *   baseline: a bare `fetch` loop that sends the request and reads the PAYMENT-REQUIRED header;
 *   prober:   full catalog cycles through Prober.runCycle on a SQLite file: outbound guard,
 *             fetch, challenge decoding, observation insert, metrics row and status refresh.
 * Rounds alternate so load from other processes hits both alike; medians are printed with the
 * ratio prober / baseline. `BENCH_DB=:memory:` measures without the store file's fsyncs.
 */

import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, ManagedRuntime } from "effect"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { entry, verificationConfig, verificationStack } from "../test/fixtures/verificationStack.js"
import { startX402Fixture } from "../test/fixtures/x402Resource.js"
import { throughput } from "./support/throughput.js"

const ENDPOINTS = 200
const CONCURRENCY = 16
const ROUNDS = 3
const ROUND_MS = 2000

const fixture = await startX402Fixture()
const urls = Array.from({ length: ENDPOINTS }, (_, i) => fixture.url(`/paid/${i}`))

const bareCycle = async () => {
  let next = 0
  const worker = async () => {
    while (next < urls.length) {
      const response = await fetch(urls[next++]!, { redirect: "manual", signal: AbortSignal.timeout(5000) })
      if (response.status !== 402 || !response.headers.get("payment-required"))
        throw new Error("fixture did not answer 402")
      await response.body?.cancel()
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
}

const config = {
  ...verificationConfig({ trustedOrigins: [fixture.origin], concurrency: CONCURRENCY }),
  database: process.env.BENCH_DB ?? join(mkdtempSync(join(tmpdir(), "sextant-bench-probe-")), "sextant.db")
}
const runtime = ManagedRuntime.make(verificationStack(config))
await runtime.runPromise(
  Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(urls.map((url, i) => entry(`bench-${i}`, url))))
)
const proberCycle = () =>
  runtime.runPromise(
    Effect.flatMap(Prober, (p) => p.runCycle).pipe(
      Effect.tap((report) =>
        report.healthy === ENDPOINTS ? Effect.void : Effect.die(new Error("a probe was not healthy"))
      )
    )
  )

// Warm-up: JIT, connection pool, prepared statements.
await bareCycle()
await proberCycle()

const bare: Array<number> = []
const prober: Array<number> = []
for (let round = 0; round < ROUNDS; round++) {
  bare.push(await throughput(ROUND_MS, ENDPOINTS, bareCycle))
  prober.push(await throughput(ROUND_MS, ENDPOINTS, proberCycle))
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const b = median(bare)
const p = median(prober)
console.log(`endpoints ${ENDPOINTS}, concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${ROUND_MS} ms each`)
console.log(`bare fetch loop: ${b.toFixed(0)} probes/s`)
console.log(`Prober.runCycle: ${p.toFixed(0)} probes/s (recorded, metrics and status kept current)`)
console.log(`ratio prober / bare fetch: ${(p / b).toFixed(2)}`)

await runtime.dispose()
await fixture.stop()
