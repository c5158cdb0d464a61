import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HttpServer } from "@effect/platform"
import { Layer, ManagedRuntime } from "effect"
import { createHash } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ServicesLive } from "../src/app.js"
import type { Config } from "../src/config.js"
import { BunServerLive, HttpLive } from "../src/http/server.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import { Signer } from "../src/receipts/Signer.js"
import type { Router } from "../src/routing/Router.js"
import { catalogRouter, demoCatalog } from "./receiptsFixtures.js"
import { request, testConfig } from "./support/server.js"

const API_KEY = "receipts-test-key"

/**
 * The real HTTP stack and services, with ReceiptService on the configured signer. `router` swaps
 * in the catalog router so that purchases can succeed while no resource has probe evidence yet.
 */
const startReceiptsServer = async (config: Config, router?: Layer.Layer<Router>) => {
  const services = ServicesLive(config)
  const receipts = ReceiptService.Live.pipe(
    Layer.provide(router === undefined ? Signer.fromConfig : Layer.merge(Signer.fromConfig, router)),
    Layer.provide(services)
  )
  const runtime = ManagedRuntime.make(
    HttpLive.pipe(
      Layer.provide(Layer.merge(services, receipts)),
      Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 }))
    )
  )
  const address = (await runtime.runPromise(HttpServer.HttpServer)).address
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  return { url: `http://127.0.0.1:${address.port}`, close: () => runtime.dispose() }
}

const purchase = {
  request: { capability: "rwa.inspect", optimizeFor: "cheapest", intent: "issuer check" },
  payment: { network: "stellar:testnet", scheme: "exact", asset: "USDC", amount: "5000", transactionHash: "d".repeat(64) },
  response: { status: 200, body: '{"issuer":"ok"}' }
}

describe("receipts over HTTP", () => {
  let server: Awaited<ReturnType<typeof startReceiptsServer>>
  const keyed = { authorization: `Bearer ${API_KEY}` }
  beforeAll(async () => {
    const folder = mkdtempSync(join(tmpdir(), "sextant-receipts-http-"))
    const config = testConfig({
      signer: { ed25519KeyFile: join(folder, "signer.key") },
      apiKeys: [{ principal: "buyer", sha256: createHash("sha256").update(API_KEY).digest("hex") }]
    })
    server = await startReceiptsServer(config, catalogRouter(demoCatalog))
  })
  afterAll(() => server.close())

  test("POST /v1/receipts answers a signed receipt that verifies offline, and GET returns it unchanged", async () => {
    const created = await request(`${server.url}/v1/receipts`, { method: "POST", json: purchase, headers: keyed })
    expect(created.status).toBe(200)
    expect(created.body).toMatchObject({
      payment: { protocol: "x402", maxAmount: "5000", transactionHash: "d".repeat(64) },
      service: { resourceId: "meridian-rwa.rwa.inspect" },
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

    const notOffered = await post({ ...purchase, resourceId: "stellar-intel.rwa.changes" })
    expect(notOffered).toMatchObject({ status: 422, body: { error: "NO_ELIGIBLE_PROVIDER" } })
  })
})

describe("receipts over HTTP with the live router", () => {
  test("with no probe evidence nothing is eligible: 422 NO_ELIGIBLE_PROVIDER, and HMAC mode is disclosed", async () => {
    const server = await startReceiptsServer(testConfig({ signer: { hmacSecret: "an hmac secret of some length" } }))
    try {
      const { status, body } = await request(`${server.url}/v1/receipts`, { method: "POST", json: purchase })
      expect(status).toBe(422)
      expect(body.error).toBe("NO_ELIGIBLE_PROVIDER")
      expect(body.message).toContain("rwa.inspect")
      const signer = await request(`${server.url}/v1/receipts/signer`)
      expect(signer.body).toMatchObject({ mode: "hmac-sha256", publicKey: null, offlineVerifiable: false })
      expect(JSON.stringify(signer.body)).not.toContain("an hmac secret")
    } finally {
      await server.close()
    }
  })
})
