import { describe, expect, test } from "bun:test"
import { startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { pollUntil } from "./support/poll.js"
import { facilitatorsAnswered, ledgerAt, request, startServer, testConfig } from "./support/server.js"

/**
 * Level 3 bought for two base units: on the rules before, two fresh payers each settling amount
 * "1" to the payee of a resource priced FIXTURE_AMOUNT, naming its URL, lifted it from
 * PAYMENT_VERIFIED to TRANSACTION_VERIFIED (the settle's evidence took the signed transfer as the
 * expected amount). Default config: verification.minDistinctPayers 2.
 */
const shared = sharedLedgerAndSeller()
const { ledger, running, seller } = shared

const service = async () => {
  const backend = startFacilitator({ ledger })
  const base = testConfig()
  const server = await startServer(
    testConfig({
      facilitators: [{ id: "a", url: backend.url }],
      catalog: [entry("fixture.paid", seller().url("/paid"))],
      probes: { ...base.probes, allowPrivateTargets: true },
      ledger: ledgerAt(ledger, 4)
    })
  )
  running.push(server, { close: () => backend.stop() })
  await facilitatorsAnswered(server.url)
  expect(
    (await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "fixture.paid" } })).body.outcome
  ).toBe("healthy")
  const detail = async () => (await request(`${server.url}/v1/resources/fixture.paid`)).body
  /** A settle by a fresh payer of `amount` to the fixture payee, naming the resource's URL. */
  const settleAs = async (seed: number, amount: string) => {
    const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO, amount })
    const payment = await buildExactPayment(requirements, {
      buyer: seededBuyer(seed),
      validUntilLedger: ledger.latestLedger() + 12
    })
    const body = settleBody(
      { ...payment, resource: { ...payment.resource!, url: seller().url("/paid") } },
      requirements
    )
    const answer = await request(`${server.url}/x402/settle`, { method: "POST", json: body })
    expect(answer).toMatchObject({ status: 200, body: { success: true } })
    return answer.body.transaction as string
  }
  /** The resource once every settle's evidence has left `pending`. */
  const judged = (hashes: ReadonlyArray<string>) =>
    pollUntil(
      "the settles' evidence is judged",
      detail,
      (body) =>
        hashes.every((h) =>
          body.economicEvidence.some(
            (e: { transactionHash: string; state: string }) => e.transactionHash === h && e.state !== "pending"
          )
        ),
      { timeoutMs: 10_000 }
    )
  return { settleAs, judged }
}

describe("evidence costs what it claims", () => {
  test("two fresh payers settling one base unit each, naming a resource priced higher, leave it at level 2", async () => {
    const { settleAs, judged } = await service()
    const hashes = [await settleAs(141, "1"), await settleAs(142, "1")]
    const after = await judged(hashes)
    expect(after.resource).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2 })
    for (const hash of hashes) {
      const evidence = after.economicEvidence.find((e: { transactionHash: string }) => e.transactionHash === hash)
      expect(evidence).toMatchObject({
        state: "rejected",
        reason: expect.stringContaining(`asks at least ${FIXTURE_AMOUNT}`)
      })
    }
    expect(after.metrics.transactionSuccessRate).toBe(0)
  }, 30_000)

  test("two fresh payers settling the price lift it to level 3", async () => {
    const { settleAs, judged } = await service()
    const after = await judged([await settleAs(143, FIXTURE_AMOUNT), await settleAs(144, FIXTURE_AMOUNT)])
    expect(after.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
  }, 30_000)
})
