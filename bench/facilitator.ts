/**
 * Embedded facilitator throughput, `npm run bench:facilitator` (about a minute).
 *
 * The embedded backend settles against the fixture ledger (test/fixtures/ledger.ts), which holds
 * one queued transaction per source account and closes a ledger every LEDGER_MS. With 1, 4 and
 * 16 channel accounts, SETTLES_PER_CHANNEL settles per channel are sent at once; printed: settles
 * per ledger (over the ledgers between the first and the last transaction applied) as a ratio to
 * the limit, the channel count (one transaction per source per ledger). Then settles one at a time
 * with 16 channels: Sextant's own time per settle, the settle's latency less the time the ledger
 * held its transaction (accepted to applied), p50 and p95; it includes the getTransaction polling
 * step (POLL_MS). Loopback only.
 */
import { Duration, Effect } from "effect"
import { startFixtureLedger } from "../test/fixtures/ledger.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "../test/fixtures/stellarPayment.js"
import { configFor, embeddedEntry, feeKeyFile, withEmbedded } from "../test/support/embeddedFacilitator.js"

const LEDGER_MS = Number(process.env.BENCH_LEDGER_MS ?? 500)
const SETTLES_PER_CHANNEL = Number(process.env.BENCH_SETTLES_PER_CHANNEL ?? 6)
const SEQUENTIAL = Number(process.env.BENCH_SEQUENTIAL ?? 30)
const POLL_MS = 25
const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"

const quantile = (values: ReadonlyArray<number>, q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

const run = async (channels: number, count: number, concurrent: boolean) => {
  const ledger = startFixtureLedger({ network: { closeEveryMs: LEDGER_MS } })
  // Buyers are seeds 1000 + i (a byte: 232-255, 0-71); the fee account is none of them.
  const fee = feeKeyFile(100 + channels)
  const config = configFor(ledger, [embeddedEntry(fee.path, { channels, pollIntervalMs: POLL_MS })])
  const requirements = exactRequirements({ payTo: PAY_TO })
  const bodies = await Promise.all(
    Array.from({ length: count }, async (_, i) =>
      settleBody(
        await buildExactPayment(requirements, {
          buyer: seededBuyer(1000 + i),
          validUntilLedger: ledger.latestLedger() + 60
        }),
        requirements
      )
    )
  )
  const timed = (
    backend: {
      readonly settle: (
        body: unknown,
        timeout: Duration.DurationInput
      ) => Effect.Effect<{ readonly success: boolean; readonly transaction: string }, unknown>
    },
    body: unknown
  ) =>
    Effect.gen(function* () {
      const start = performance.now()
      const answer = yield* backend.settle(body, Duration.seconds(120))
      return { answer, ms: performance.now() - start }
    })
  const results = await withEmbedded(config, (backend) =>
    Effect.forEach(bodies, (body) => timed(backend, body), { concurrency: concurrent ? "unbounded" : 1 })
  )
  ledger.stop()
  const failed = results.filter((r) => !r.answer.success).length
  if (failed > 0)
    throw new Error(`${failed} settles failed: ${JSON.stringify(results.find((r) => !r.answer.success)?.answer)}`)
  const applied = results.map((r) => ledger.ledgerOf(r.answer.transaction)!)
  const span = Math.max(...applied) - Math.min(...applied) + 1
  const ledgerMs = new Map(
    ledger.network.accepted.map((a) => [a.hash, (ledger.network.appliedAt.get(a.hash) ?? a.at) - a.at])
  )
  const own = results.map((r) => r.ms - (ledgerMs.get(r.answer.transaction) ?? 0))
  return { perLedger: count / span, span, own }
}

console.log(
  `embedded facilitator, fixture ledger closing every ${LEDGER_MS} ms, ${SETTLES_PER_CHANNEL} settles per channel sent at once`
)
console.log("channels | settles | ledgers | settles/ledger | ratio to limit")
for (const channels of [1, 4, 16]) {
  const { perLedger, span } = await run(channels, channels * SETTLES_PER_CHANNEL, true)
  console.log(
    `${String(channels).padStart(8)} | ${String(channels * SETTLES_PER_CHANNEL).padStart(7)} | ${String(span).padStart(7)} | ${perLedger.toFixed(2).padStart(14)} | ${(perLedger / channels).toFixed(2)}`
  )
}
const { own } = await run(16, SEQUENTIAL, false)
console.log(
  `Sextant's own time per settle (one at a time, ${SEQUENTIAL} settles): p50 ${quantile(own, 0.5).toFixed(1)} ms, p95 ${quantile(own, 0.95).toFixed(1)} ms`
)
process.exit(0)
