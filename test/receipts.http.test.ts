import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TESTNET_USDC } from "../src/config.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

const API_KEY = "receipts-test-key"

let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

/** Two providers of `demo.paid`: one a real x402 resource that gets probed, one that never is. */
const catalogFor = (fixture: X402Fixture) => {
  const option = {
    network: "stellar:testnet" as const,
    scheme: "exact" as const,
    asset: TESTNET_USDC,
    amount: FIXTURE_AMOUNT,
    amountUsd: 0.001,
    payTo: FIXTURE_PAY_TO
  }
  const entry = (id: string, url: string) => ({
    resource: { id, type: "http" as const, name: id, description: "paid demo", url, method: "GET" as const, capabilities: ["demo.paid"] },
    provider: { id: `${id}-provider`, name: id },
    paymentOptions: [option]
  })
  return [entry("fixture.paid", fixture.url("/paid")), entry("fixture.unprobed", fixture.url("/paid/unprobed"))]
}

const purchase = {
  request: { capability: "demo.paid", optimizeFor: "cheapest", intent: "issuer check" },
  payment: { network: "stellar:testnet", scheme: "exact", asset: TESTNET_USDC, amount: FIXTURE_AMOUNT, transactionHash: "d".repeat(64) },
  response: { status: 200, body: '{"issuer":"ok"}' }
}

describe("receipts over HTTP", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  const keyed = { authorization: `Bearer ${API_KEY}` }
  beforeAll(async () => {
    const folder = mkdtempSync(join(tmpdir(), "sextant-receipts-http-"))
    const base = testConfig()
    server = await startServer(
      testConfig({
        catalog: catalogFor(fixture),
        probes: { ...base.probes, allowPrivateTargets: true },
        signer: { ed25519KeyFile: join(folder, "signer.key") },
        apiKeys: [{ principal: "buyer", sha256: createHash("sha256").update(API_KEY).digest("hex") }]
      })
    )
    // Real evidence: a live probe of the fixture's x402 challenge makes it eligible.
    const probed = await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "fixture.paid" }, headers: keyed })
    expect(probed.body.outcome).toBe("healthy")
  })
  afterAll(() => server.close())

  test("POST /v1/receipts answers a signed receipt that verifies offline, and GET returns it unchanged", async () => {
    const created = await request(`${server.url}/v1/receipts`, { method: "POST", json: purchase, headers: keyed })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({
      payment: { protocol: "x402", maxAmount: FIXTURE_AMOUNT, transactionHash: "d".repeat(64) },
      service: { resourceId: "fixture.paid" },
      signatureAlgorithm: "ed25519"
    })
    expect(verifyReceipt(created.body).valid).toBe(true)

    const fetched = await request(`${server.url}/v1/receipts/${created.body.receiptId}`)
    expect(fetched.status).toBe(200)
    expect(fetched.body).toEqual(created.body)

    const checked = await request(`${server.url}/v1/receipts/${created.body.receiptId}/verify`)
    expect(checked).toMatchObject({
      status: 200,
      body: { receiptId: created.body.receiptId, valid: true, algorithm: "ed25519", signer: created.body.serviceSigner }
    })

    const signer = await request(`${server.url}/v1/receipts/signer`)
    expect(signer.status).toBe(200)
    expect(signer.body).toMatchObject({ mode: "ed25519", publicKey: created.body.serviceSigner, offlineVerifiable: true })
    expect(signer.body.stellarPublicKey).toMatch(/^G[A-Z2-7]{55}$/)

    // A receipt with a transaction hash is transaction evidence: the resource reaches level 3.
    const resource = await request(`${server.url}/v1/resources/fixture.paid`)
    expect(resource.body.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
  })

  test("unknown receipts are 404 {error, message} on read and verify", async () => {
    for (const path of ["/v1/receipts/rcpt_missing", "/v1/receipts/rcpt_missing/verify"]) {
      const { status, body } = await request(`${server.url}${path}`)
      expect(status).toBe(404)
      expect(body).toEqual({ error: "NOT_FOUND", message: 'no receipt with id "rcpt_missing"' })
    }
  })

  test("creation needs the API key when keys are configured; bad purchases are 400 and ineligible ones 422", async () => {
    const post = (json: unknown, headers: Record<string, string> = keyed) =>
      request(`${server.url}/v1/receipts`, { method: "POST", json, headers })
    expect((await post(purchase, {})).status).toBe(401)

    const noHash = await post({ ...purchase, response: { status: 200 } })
    expect(noHash).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(noHash.body.message).toContain("bodySha256")

    const badAmount = await post({ ...purchase, payment: { ...purchase.payment, amount: "0.5" } })
    expect(badAmount.status).toBe(400)
    expect(badAmount.body.message).toContain("amount")

    const notOffered = await post({ ...purchase, resourceId: "fixture.unprobed" })
    expect(notOffered).toMatchObject({ status: 422, body: { error: "NO_ELIGIBLE_PROVIDER" } })
  })
})

describe("receipts over HTTP with the live router", () => {
  test("with no probe evidence nothing is eligible: 422 NO_ELIGIBLE_PROVIDER, and HMAC mode is disclosed", async () => {
    const server = await startServer(
      testConfig({ catalog: catalogFor(fixture), signer: { hmacSecret: "an hmac secret of some length" } })
    )
    try {
      const { status, body } = await request(`${server.url}/v1/receipts`, { method: "POST", json: purchase })
      expect(status).toBe(422)
      expect(body.error).toBe("NO_ELIGIBLE_PROVIDER")
      expect(body.message).toContain("demo.paid")
      const signer = await request(`${server.url}/v1/receipts/signer`)
      expect(signer.body).toMatchObject({ mode: "hmac-sha256", publicKey: null, offlineVerifiable: false })
      expect(JSON.stringify(signer.body)).not.toContain("an hmac secret")
    } finally {
      await server.close()
    }
  })
})
