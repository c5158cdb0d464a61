import { afterEach, describe, expect, test } from "bun:test"
import { Duration, Effect } from "effect"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { buildExactPayment, exactRequirements, settleBody, testBuyer } from "./fixtures/stellarPayment.js"
import { configFor, embeddedEntry, feeKeyFile, withEmbedded } from "./support/embeddedFacilitator.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const ledgers: Array<FixtureLedger> = []
afterEach(() => ledgers.splice(0).forEach((l) => l.stop()))
const ledgerWith = (options: Parameters<typeof startFixtureLedger>[0] = {}) => {
  const l = startFixtureLedger(options)
  ledgers.push(l)
  return l
}

describe("embedded Stellar facilitator", () => {
  test("settles one transfer from a channel account, its fee paid by the fee account in a fee bump", async () => {
    const ledger = ledgerWith({ network: { closeEveryMs: 100 } })
    const fee = feeKeyFile()
    const config = configFor(ledger, [embeddedEntry(fee.path, { channels: 2 })])
    const requirements = exactRequirements({ payTo: PAY_TO })
    const payment = await buildExactPayment(requirements, { validUntilLedger: ledger.latestLedger() + 5 })
    const answer = await withEmbedded(config, (backend) =>
      backend.settle(settleBody(payment, requirements), Duration.seconds(20))
    )
    expect(answer).toMatchObject({ success: true, network: "stellar:testnet", payer: testBuyer.publicKey() })
    expect(ledger.transfersBetween(testBuyer.publicKey(), PAY_TO)).toBe(1)
    const sent = ledger.network.accepted
    expect(sent).toHaveLength(1)
    expect(sent[0]).toMatchObject({ hash: answer.transaction, feeSource: fee.keypair.publicKey(), feeBump: true })
    expect([fee.channel(0).publicKey(), fee.channel(1).publicKey()]).toContain(sent[0]!.source)
  })

  test("the same payment settled twice at once is sent once: both answers name the one transaction", async () => {
    const ledger = ledgerWith({ network: { closeEveryMs: 300 } })
    const fee = feeKeyFile(25)
    const config = configFor(ledger, [embeddedEntry(fee.path, { channels: 4 })])
    const requirements = exactRequirements({ payTo: PAY_TO })
    const body = settleBody(
      await buildExactPayment(requirements, { validUntilLedger: ledger.latestLedger() + 20 }),
      requirements
    )
    const answers = await withEmbedded(config, (backend) =>
      Effect.all([backend.settle(body, Duration.seconds(20)), backend.settle(body, Duration.seconds(20))], {
        concurrency: "unbounded"
      })
    )
    expect(answers.map((a) => a.success)).toEqual([true, true])
    expect(answers[0]!.transaction).toBe(answers[1]!.transaction)
    expect(ledger.network.accepted).toHaveLength(1)
    expect(ledger.transfersBetween(testBuyer.publicKey(), PAY_TO)).toBe(1)
  })

  test("still queued at the deadline: settlement_pending with the hash; followed on, a repeat gets the success without a second send", async () => {
    const ledger = ledgerWith({ network: { closeEveryMs: 2_500 } })
    const fee = feeKeyFile(27)
    const config = configFor(ledger, [embeddedEntry(fee.path, { channels: 1 })])
    const requirements = exactRequirements({ payTo: PAY_TO })
    const body = settleBody(
      await buildExactPayment(requirements, { validUntilLedger: ledger.latestLedger() + 10 }),
      requirements
    )
    const [first, repeat] = await withEmbedded(config, (backend) =>
      Effect.gen(function* () {
        const first = yield* backend.settle(body, Duration.millis(1_300))
        const repeat = yield* backend.settle(body, Duration.seconds(10))
        return [first, repeat]
      })
    )
    expect(first).toMatchObject({ success: false, errorReason: "settlement_pending", payer: testBuyer.publicKey() })
    expect(first!.transaction).toMatch(/^[0-9a-f]{64}$/)
    expect(repeat).toMatchObject({ success: true, transaction: first!.transaction })
    expect(ledger.network.accepted).toHaveLength(1)
  })
})
