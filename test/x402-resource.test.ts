import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { decodePaymentResponseHeader } from "@x402/core/http"
import { startFacilitator } from "./fixtures/facilitator.js"
import { payFor, startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { request, startServer, testConfig } from "./support/server.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const RESOURCE_ID = "seller.rwa.inspect"

const backend = startFacilitator()
const resource = startPaidResource({ payTo: PAY_TO, amount: "10000" })
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      facilitators: [{ id: "fixture", url: backend.url }],
      catalog: [resource.catalogEntry(RESOURCE_ID)],
      probes: { ...base.probes, allowPrivateTargets: true }
    })
  )
  for (let i = 0; i < 200; i++) {
    const { body } = await request(`${server.url}/x402/supported`)
    if (body.kinds?.length > 0) break
    await Bun.sleep(10)
  }
  // The seller's stock resource server uses this service as its facilitator.
  await resource.useFacilitator(`${server.url}/x402`)
})
afterAll(async () => {
  await server.close()
  await resource.stop()
  await backend.stop()
})

describe("a stock x402 resource server using this service as its facilitator", () => {
  test("a paid request completes end to end: 402, signed payment, verify and settle through the service, 200", async () => {
    // The payee must have verification evidence before settlement pays it: probe the resource once.
    const probe = await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: RESOURCE_ID } })
    expect(probe.status).toBe(200)
    expect(probe.body.healthy).toBe(true)

    const unpaid = await fetch(resource.url)
    expect(unpaid.status).toBe(402)
    const { header } = await payFor(unpaid.headers.get("payment-required") ?? "", (requirements) => buildExactPayment(requirements))

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
    expect(decodePaymentResponseHeader(replay.headers.get("payment-response") ?? "").transaction).toBe(receipt.transaction)
    expect(backend.calls("/settle")).toBe(1)

    // The settlement is economic evidence for the payee's resource.
    const after = await request(`${server.url}/v1/resources/${RESOURCE_ID}`)
    expect(after.body.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    expect(after.body.metrics.transactionSuccessRate).toBe(1)
  })
})
