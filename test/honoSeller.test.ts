import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { decodePaymentResponseHeader } from "@x402/core/http"
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import { paymentMiddleware } from "@x402/hono"
import { Effect, Schema } from "effect"
import { Hono } from "hono"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { payFor as buyerPayFor } from "../src/payments/payFor.js"
import { stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { payFor } from "./fixtures/paidResource.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"

/**
 * A seller built from the stock @x402/hono 2.27 middleware, with the project's Stellar `exact`
 * server scheme registered on it (@x402/stellar 2.9 cannot register with core 2.27) and Sextant's
 * `/x402` as its facilitator.
 */
let stack: Awaited<ReturnType<typeof startSellerStack>>
let seller: ReturnType<typeof Bun.serve>
let url: string

beforeAll(async () => {
  stack = await startSellerStack()
  const core = new x402ResourceServer(new HTTPFacilitatorClient({ url: `${stack.server.url}/x402` })).register(
    "stellar:testnet",
    stellarServerScheme("exact")
  )
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        "GET /weather": {
          accepts: {
            scheme: "exact",
            network: "stellar:testnet",
            payTo: SELLER_PAY_TO,
            price: { asset: TESTNET_USDC, amount: "10000" }
          },
          description: "Weather by city",
          mimeType: "application/json"
        }
      },
      core
    )
  )
  app.get("/weather", (c) => c.json({ tempC: 21 }))
  seller = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch })
  url = `http://127.0.0.1:${seller.port}/weather`
})
afterAll(async () => {
  seller.stop(true)
  await stack.stop()
})

describe("a stock @x402/hono 2.27 seller with Sextant as its facilitator", () => {
  test("answers 402 with its challenge, is paid, settles once through Sextant and serves the data", async () => {
    // Settlement pays a payee with verification evidence: the stack's resource has the same payee.
    expect(
      (
        await it.run(
          stack.server.client.verification.validate({ payload: { resourceId: ResourceId.make(SELLER_RESOURCE_ID) } })
        )
      ).healthy
    ).toBe(true)
    const unpaid = await fetch(url)
    expect(unpaid.status).toBe(402)
    const { header } = await payFor(unpaid.headers.get("payment-required") ?? "", (requirements) =>
      buildExactPayment(requirements)
    )
    const paid = await fetch(url, { headers: { "payment-signature": header } })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ tempC: 21 })
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
    expect(settlement).toMatchObject({ success: true, network: "stellar:testnet" })
    expect(settlement.transaction).toMatch(/^[0-9a-f]{64}$/)
    expect([stack.backend.calls("/verify"), stack.backend.calls("/settle")]).toEqual([1, 1])
  })

  test("its single retry of a pending settlement gets the settlement from Sextant, with no second forward", async () => {
    stack.backend.setMode("settlePending")
    try {
      const settlesBefore = stack.backend.calls("/settle")
      const unpaid = await fetch(url)
      const { header } = await payFor(unpaid.headers.get("payment-required") ?? "", (requirements) =>
        buildExactPayment(requirements)
      )
      const paid = await fetch(url, { headers: { "payment-signature": header } })
      expect(paid.status).toBe(200)
      const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
      expect(settlement).toMatchObject({ success: true, network: "stellar:testnet" })
      expect(stack.ledger.succeeded(settlement.transaction)).toBe(true)
      // The first settle reached the backend, which answered pending; the seller's retry was answered by Sextant.
      expect(stack.backend.calls("/settle") - settlesBefore).toBe(1)
      const [latest] = (await it.run(stack.server.client.x402.settlements({ urlParams: {} }))).settlements
      const record = await it.run(stack.server.client.x402.settlement({ path: { id: latest!.id } }))
      expect(record).toMatchObject({ state: "settled", transaction: settlement.transaction })
      expect(record.history.map((h: { to: string }) => h.to)).toEqual(["pending", "pending", "settled"])
    } finally {
      stack.backend.setMode("succeed")
    }
  })

  it.live(
    "Sextant's own buyer pays it: the challenge signed locally, settled once through Sextant, the data served",
    () =>
      Effect.gen(function* () {
        const settlesBefore = stack.backend.calls("/settle")
        const paid = yield* buyerPayFor({
          url,
          method: "GET",
          signer: Keypair.fromRawEd25519Seed(Buffer.alloc(32, 77)),
          rpcUrl: stack.ledger.rpcUrl,
          inclusionFeeStroops: 10_000,
          deployment: { network: "stellar:testnet", assetContract: TESTNET_USDC },
          maxPrice: 1_000_000n,
          outbound: Schema.decodeSync(ProbesConfig)({ trustedOrigins: [new URL(url).origin], timeoutMs: 5000 })
        })
        expect(paid.status).toBe(200)
        expect(JSON.parse(paid.body?.toString() ?? "null")).toEqual({ tempC: 21 })
        expect(paid.paymentResponse).toMatchObject({ success: true, network: "stellar:testnet" })
        expect(stack.ledger.succeeded(paid.paymentResponse?.transaction ?? "")).toBe(true)
        expect(stack.backend.calls("/settle") - settlesBefore).toBe(1)
      })
  )
})
