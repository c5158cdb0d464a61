import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { decodePaymentResponseHeader } from "@x402/core/http"
import { payFor } from "./fixtures/paidResource.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { pollUntil } from "./support/poll.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request } from "./support/server.js"

let stack: Awaited<ReturnType<typeof startSellerStack>>
let server: Awaited<ReturnType<typeof startSellerStack>>["server"]
let backend: Awaited<ReturnType<typeof startSellerStack>>["backend"]
let resource: Awaited<ReturnType<typeof startSellerStack>>["resource"]

beforeAll(async () => {
  // Room for one sponsored fee per principal in the window.
  // One buyer's payment lifts the resource here (trust.level3.test.ts covers the distinct-payer threshold).
  stack = await startSellerStack((base) => ({
    budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 },
    verification: { ...base.verification, minDistinctPayers: 1 }
  }))
  ;({ server, backend, resource } = stack)
})
afterAll(() => stack.stop())

describe("a stock x402 resource server using this service as its facilitator", () => {
  test("a paid request completes end to end: 402, signed payment, verify and settle through the service, 200", async () => {
    // The payee must have verification evidence before settlement pays it: probe the resource once.
    const probe = await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: RESOURCE_ID } })
    expect(probe.status).toBe(200)
    expect(probe.body.healthy).toBe(true)

    const unpaid = await fetch(resource.url)
    expect(unpaid.status).toBe(402)
    const { header } = await payFor(unpaid.headers.get("payment-required") ?? "", (requirements) =>
      buildExactPayment(requirements)
    )

    const paid = await fetch(resource.url, { headers: { "payment-signature": header } })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ data: "paid content" })
    const receipt = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
    expect(receipt.success).toBe(true)
    expect(receipt.network).toBe("stellar:testnet")
    expect(receipt.transaction).toMatch(/^[0-9a-f]{64}$/)
    expect([backend.calls("/verify"), backend.calls("/settle")]).toEqual([1, 1])

    // The same signed payment presented again is answered from the journal, not settled twice.
    const replay = await fetch(resource.url, { headers: { "payment-signature": header } })
    expect(replay.status).toBe(200)
    expect(decodePaymentResponseHeader(replay.headers.get("payment-response") ?? "").transaction).toBe(
      receipt.transaction
    )
    expect(backend.calls("/settle")).toBe(1)

    // The settlement is economic evidence for the payee's resource once the ledger confirms it.
    const after = await pollUntil(
      "the settlement is confirmed on the ledger",
      () => request(`${server.url}/v1/resources/${RESOURCE_ID}`),
      (r) => r.body.economicEvidence?.[0]?.state === "confirmed"
    )
    expect(after.body.economicEvidence[0]).toMatchObject({ source: "settlement", transactionHash: receipt.transaction })
    expect(after.body.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    expect(after.body.metrics.transactionSuccessRate).toBe(1)
  })

  test("past the per-principal fee budget a settle is 429 FEE_BUDGET_EXHAUSTED with Retry-After, and nothing is forwarded", async () => {
    const settlesBefore = backend.calls("/settle")
    const requirements = exactRequirements({ payTo: PAY_TO })
    const body = settleBody(await buildExactPayment(requirements), requirements)
    const { status, headers, body: error } = await request(`${server.url}/x402/settle`, { method: "POST", json: body })
    expect(status).toBe(429)
    const retryAfter: number = error.retryAfterSeconds
    expect(error.error).toBe("FEE_BUDGET_EXHAUSTED")
    // The first settlement's reservation leaves the one-hour window within the hour.
    expect(retryAfter).toBeGreaterThan(3500)
    expect(retryAfter).toBeLessThanOrEqual(3600)
    expect(headers.get("retry-after")).toBe(String(retryAfter))
    expect(backend.calls("/settle")).toBe(settlesBefore)
  })

  test("a transfer to someone other than payTo is refused with 400 before any backend call", async () => {
    const settlesBefore = backend.calls("/settle")
    const requirements = exactRequirements({ payTo: PAY_TO })
    const payment = await buildExactPayment(requirements, {
      transfer: { to: "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57" }
    })
    const { status, body } = await request(`${server.url}/x402/settle`, {
      method: "POST",
      json: settleBody(payment, requirements)
    })
    expect(status).toBe(400)
    expect(body).toMatchObject({ error: "TRANSFER_RECIPIENT_MISMATCH" })
    expect(backend.calls("/settle")).toBe(settlesBefore)
  })
})
