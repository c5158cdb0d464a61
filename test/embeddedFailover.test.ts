import { describe, expect, test } from "bun:test"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { embeddedEntry, feeKeyFile } from "./support/embeddedFacilitator.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { ledgerPayment, twoBackendService } from "./support/twoBackends.js"

/**
 * Failover between the embedded backend and an HTTP one, both ways, on the nonce-enforcing fixture
 * ledger: whichever backend ends up settling, the payment executes once.
 */
const shared = sharedLedgerAndSeller()
const { ledger } = shared
const fee = feeKeyFile(71)

describe("failover between the embedded and an HTTP backend", () => {
  test("embedded first, its RPC failing before anything is sent: the HTTP backend settles, one transfer", async () => {
    const { b, settle, journal } = await twoBackendService(shared, (config) => ({
      ...config,
      facilitators: [embeddedEntry(fee.path, { id: "embedded", channels: 1 }), config.facilitators[1]!]
    }))
    ledger.setMethodFailing("simulateTransaction")
    try {
      const { payer, body } = await ledgerPayment(shared, 111, 10)
      const answer = await settle(body)
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({ success: true, payer })
      expect(b.calls("/settle")).toBe(1)
      expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
      const [entry] = await journal()
      expect(entry).toMatchObject({ state: "settled", backendId: "b" })
    } finally {
      ledger.setMethodFailing("simulateTransaction", false)
    }
  }, 30_000)

  test("HTTP first, answering 500 without executing: the ledger shows the nonce unspent, the embedded backend settles, one transfer", async () => {
    const { a, settle, journal } = await twoBackendService(shared, (config) => ({
      ...config,
      facilitators: [config.facilitators[0]!, embeddedEntry(fee.path, { id: "embedded", channels: 1 })]
    }))
    a.setMode("settle500")
    const { payer, body } = await ledgerPayment(shared, 112, 10)
    const answer = await settle(body)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true, payer })
    expect(a.calls("/settle")).toBe(1)
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
    const [entry] = await journal()
    expect(entry).toMatchObject({ state: "settled", backendId: "embedded", transaction: answer.body.transaction })
  }, 30_000)

  test("HTTP first and unreachable: the embedded backend settles at once", async () => {
    const { a, settle } = await twoBackendService(shared, (config) => ({
      ...config,
      facilitators: [config.facilitators[0]!, embeddedEntry(fee.path, { id: "embedded", channels: 1 })]
    }))
    await a.stop()
    const { payer, body } = await ledgerPayment(shared, 113, 10)
    const answer = await settle(body)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true, payer })
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)
})
