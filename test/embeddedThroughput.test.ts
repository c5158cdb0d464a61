import { afterEach, describe, expect, test } from "bun:test"
import { Duration, Effect } from "effect"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { configFor, embeddedEntry, feeKeyFile, withEmbedded } from "./support/embeddedFacilitator.js"

// Channel accounts against a ledger that closes every 500 ms and holds one queued transaction per
// source: N channels let N settles ride one ledger; one source serializes them, a ledger each.

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const ledgers: Array<FixtureLedger> = []
afterEach(() => ledgers.splice(0).forEach((l) => l.stop()))

const settleMany = async (count: number, channels: number) => {
  const ledger = startFixtureLedger({ network: { closeEveryMs: 500 } })
  ledgers.push(ledger)
  const fee = feeKeyFile(31)
  const config = configFor(ledger, [embeddedEntry(fee.path, { channels })])
  const requirements = exactRequirements({ payTo: PAY_TO })
  const bodies = await Promise.all(
    Array.from({ length: count }, async (_, i) =>
      settleBody(
        await buildExactPayment(requirements, {
          buyer: seededBuyer(100 + i),
          validUntilLedger: ledger.latestLedger() + 60
        }),
        requirements
      )
    )
  )
  const answers = await withEmbedded(config, (backend) =>
    Effect.forEach(bodies, (body) => backend.settle(body, Duration.seconds(50)), { concurrency: "unbounded" })
  )
  const appliedIn = answers.map((a) => ledger.ledgerOf(a.transaction))
  return {
    ledger,
    answers,
    ledgersUsed: new Set(appliedIn).size,
    sources: new Set(ledger.network.accepted.map((a) => a.source))
  }
}

describe("embedded facilitator throughput", () => {
  test("64 concurrent settles with 8 channels: all settled, about 8 per ledger, no txBadSeq reaching a client", async () => {
    const { ledger, answers, ledgersUsed, sources } = await settleMany(64, 8)
    expect(answers.filter((a) => a.success)).toHaveLength(64)
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(64)
    expect(ledger.network.accepted).toHaveLength(64)
    expect(sources.size).toBe(8)
    // 64 settles / 8 sources: 8 ledgers if every close took a full set; a few more for the verify stagger.
    expect(ledgersUsed).toBeLessThanOrEqual(12)
    expect(ledger.network.badSequences).toHaveLength(0)
  }, 60_000)

  test("one source serializes: 12 settles land in 12 different ledgers", async () => {
    const { answers, ledgersUsed, sources } = await settleMany(12, 1)
    expect(answers.filter((a) => a.success)).toHaveLength(12)
    expect(sources.size).toBe(1)
    expect(ledgersUsed).toBe(12)
  }, 60_000)

  test("a channel whose sequence moved behind the facilitator's back: txBadSeq is re-read, the settle succeeds", async () => {
    const ledger = startFixtureLedger({ network: { closeEveryMs: 200 } })
    ledgers.push(ledger)
    const fee = feeKeyFile(33)
    const config = configFor(ledger, [embeddedEntry(fee.path, { channels: 1 })])
    const requirements = exactRequirements({ payTo: PAY_TO })
    const pay = (seed: number) =>
      buildExactPayment(requirements, { buyer: seededBuyer(seed), validUntilLedger: ledger.latestLedger() + 60 })
    const [first, second] = await Promise.all([pay(201), pay(202)])
    const answers = await withEmbedded(config, (backend) =>
      Effect.gen(function* () {
        const a = yield* backend.settle(settleBody(first, requirements), Duration.seconds(20))
        const channel = ledger.network.account(fee.channel(0).publicKey())!
        ledger.network.setAccount(fee.channel(0).publicKey(), { ...channel, sequence: channel.sequence + 5n })
        const b = yield* backend.settle(settleBody(second, requirements), Duration.seconds(20))
        return [a, b]
      })
    )
    expect(answers.map((a) => a.success)).toEqual([true, true])
    expect(ledger.network.badSequences).toEqual([fee.channel(0).publicKey()])
  }, 60_000)
})
