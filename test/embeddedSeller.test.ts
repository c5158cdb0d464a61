import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { decodePaymentResponseHeader } from "@x402/core/http"
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import { wrapFetchWithPayment, x402Client } from "@x402/fetch"
import { paymentMiddleware } from "@x402/hono"
import { Effect, Schema } from "effect"
import { Hono } from "hono"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { payFor as buyerPayFor } from "../src/payments/payFor.js"
import { stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { it } from "./support/effectTest.js"
import { embeddedEntry, feeKeyFile } from "./support/embeddedFacilitator.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request } from "./support/server.js"
import { stockStellarClient } from "./support/stockStellarClient.js"

/**
 * A stock @x402/hono 2.27 seller whose only facilitator is Sextant, whose only backend is the
 * embedded one, on a fixture ledger closing every 200 ms: each purchase is exactly one transfer on
 * the ledger, of the price to the seller, from a channel account, its fee paid by the fee account.
 */
const fee = feeKeyFile(51)
const channels = [fee.channel(0).publicKey(), fee.channel(1).publicKey()]
let stack: Awaited<ReturnType<typeof startSellerStack>>
let seller: ReturnType<typeof Bun.serve>
let url: string

beforeAll(async () => {
  stack = await startSellerStack(() => ({ facilitators: [embeddedEntry(fee.path, { channels: 2 })] }), undefined, {
    network: { closeEveryMs: 200 }
  })
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
          description: "Weather",
          mimeType: "application/json"
        }
      },
      core
    )
  )
  app.get("/weather", (c) => c.json({ tempC: 21 }))
  seller = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch })
  url = `http://127.0.0.1:${seller.port}/weather`
  expect(
    (
      await it.run(
        stack.server.client.verification.validate({ payload: { resourceId: ResourceId.make(SELLER_RESOURCE_ID) } })
      )
    ).healthy
  ).toBe(true)
})
afterAll(async () => {
  seller.stop(true)
  await stack.stop()
})

/** What the ledger shows of one purchase's transaction. */
const onLedger = (hash: string) => ({
  succeeded: stack.ledger.succeeded(hash),
  sent: stack.ledger.network.accepted.filter((a) => a.hash === hash)
})

describe("a stock seller whose one facilitator is Sextant's embedded backend", () => {
  test("a stock @x402/fetch client signing with stellar-sdk 17 buys once: one transfer, from a channel, fee from the fee account", async () => {
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 61))
    const before = stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)
    const paying = wrapFetchWithPayment(
      fetch,
      x402Client.fromConfig({
        schemes: [{ network: "stellar:testnet", client: stockStellarClient(buyer, stack.ledger.rpcUrl) }],
        // Testnet USDC is no default asset of the stock client: allowed here, capped at $0.01.
        spendControls: {
          allowedAssets: [{ network: "stellar:testnet", asset: TESTNET_USDC, maxAmountPerPayment: "100000" }]
        }
      })
    )
    const paid = await paying(url)
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ tempC: 21 })
    const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response") ?? "")
    expect(settlement).toMatchObject({ success: true, network: "stellar:testnet", payer: buyer.publicKey() })
    expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO) - before).toBe(1)
    const { succeeded, sent } = onLedger(settlement.transaction)
    expect(succeeded).toBe(true)
    expect(sent).toHaveLength(1)
    expect(sent[0]!.feeSource).toBe(fee.keypair.publicKey())
    expect(channels).toContain(sent[0]!.source)
  })

  it.live("Sextant's own buyer pays it: one transfer of the price to the seller", () =>
    Effect.gen(function* () {
      const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 77))
      const paid = yield* buyerPayFor({
        url,
        method: "GET",
        signer: buyer,
        rpcUrl: stack.ledger.rpcUrl,
        inclusionFeeStroops: 10_000,
        deployment: { network: "stellar:testnet", assetContract: TESTNET_USDC },
        maxPrice: 1_000_000n,
        outbound: Schema.decodeSync(ProbesConfig)({ trustedOrigins: [new URL(url).origin], timeoutMs: 5000 })
      })
      expect(paid.status).toBe(200)
      expect(paid.paymentResponse).toMatchObject({ success: true, network: "stellar:testnet" })
      const hash = paid.paymentResponse?.transaction ?? ""
      expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
      const { succeeded, sent } = onLedger(hash)
      expect(succeeded).toBe(true)
      expect(sent).toHaveLength(1)
      expect(sent[0]!.feeSource).toBe(fee.keypair.publicKey())
      expect(channels).toContain(sent[0]!.source)
    })
  )

  test("GET /x402/facilitators shows the embedded backend's fee account, channels and settles", async () => {
    // Raw: the secret check reads the bytes on the wire, which a decoded answer could drop.
    const { body } = await request(`${stack.server.url}/x402/facilitators`)
    expect(body.facilitators).toHaveLength(1)
    expect(body.facilitators[0]).toMatchObject({
      id: "embedded",
      healthy: true,
      kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }],
      embedded: { network: "stellar:testnet", feeAccount: fee.keypair.publicKey(), channels: 2, leasesInUse: 0 }
    })
    expect(body.facilitators[0].embedded.settles.settled).toBeGreaterThanOrEqual(2)
    expect(JSON.stringify(body)).not.toContain(fee.keypair.secret())
  })
})
