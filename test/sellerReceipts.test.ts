import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createPublicKey, sign } from "node:crypto"
import { createReceiptJWS } from "@x402/extensions/offer-receipt"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { didJwkOf, newProviderKey } from "../src/extensions/offerReceipt.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { countingServer } from "./support/countingServer.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * A seller's receipt carried into a Sextant receipt (`POST /v1/receipts`): a key id that would need
 * a lookup is refused before any connection, and a receipt by any key about another resource or
 * network is refused, not signed into the service's receipt.
 */

let RESOURCE_URL = ""
const key = newProviderKey()
const jws = (kid: string, input: { resourceUrl: string; network: string; transaction?: string }) =>
  createReceiptJWS(
    { payer: "GPAYER", ...input },
    {
      kid,
      format: "jws",
      algorithm: "EdDSA",
      sign: async (bytes: Uint8Array) => sign(null, bytes, key).toString("base64url")
    }
  )

const catalogAt = (url: string) => [
  {
    resource: {
      id: ResourceId.make("seller.paid"),
      type: "http" as const,
      name: "paid",
      description: "paid",
      url,
      method: "GET" as const,
      capabilities: ["demo.paid"]
    },
    provider: { id: "seller", name: "seller" },
    paymentOptions: [
      {
        network: "stellar:testnet" as const,
        scheme: "exact" as const,
        asset: TESTNET_USDC,
        amount: FIXTURE_AMOUNT,
        amountUsd: 0.001,
        payTo: FIXTURE_PAY_TO
      }
    ]
  }
]

let didHost: ReturnType<typeof countingServer>
let seller: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  didHost = countingServer(() => Response.json({ id: "did:web:x", verificationMethod: [] }))
  seller = await startX402Fixture()
  RESOURCE_URL = seller.url("/paid")
  const base = testConfig()
  server = await startServer(
    testConfig({ catalog: catalogAt(RESOURCE_URL), probes: { ...base.probes, allowPrivateTargets: true } })
  )
  // One probe: the resource has evidence, so the purchase routes to it.
  expect(
    (await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "seller.paid" } })).status
  ).toBe(200)
})
afterAll(async () => {
  await server.close()
  await seller.stop()
  didHost.stop()
})

const create = (sellerReceipt: unknown) =>
  request(`${server.url}/v1/receipts`, {
    method: "POST",
    json: {
      request: { capability: "demo.paid", optimizeFor: "cheapest" },
      resourceId: "seller.paid",
      payment: { network: "stellar:testnet", scheme: "exact", asset: TESTNET_USDC, amount: FIXTURE_AMOUNT },
      response: { status: 200, body: "{}" },
      sellerReceipt
    }
  })

describe("seller receipts", () => {
  test("a did:web key id is 400 and the host it names gets no connection", async () => {
    const receipt = await jws(`did:web:127.0.0.1%3A${didHost.port}:admin:secret`, {
      resourceUrl: RESOURCE_URL,
      network: "stellar:testnet"
    })
    const answer = await create(receipt)
    expect(answer).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(answer.body.message).toContain("not a did:jwk or did:key")
    expect(didHost.requests()).toBe(0)
  })

  test("a receipt about another resource or another network is refused, whoever signed it", async () => {
    const kid = didJwkOf(createPublicKey(key))
    const elsewhere = await create(
      await jws(kid, { resourceUrl: "https://other.example/thing", network: "stellar:testnet" })
    )
    expect(elsewhere).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(elsewhere.body.message).toContain("not the resource paid")
    const otherNetwork = await create(await jws(kid, { resourceUrl: RESOURCE_URL, network: "stellar:pubnet" }))
    expect(otherNetwork).toMatchObject({ status: 400 })
    expect(otherNetwork.body.message).toContain("network stellar:pubnet")
  })

  test("a receipt about this purchase, under a self-certifying key, is carried", async () => {
    const receipt = await jws(didJwkOf(createPublicKey(key)), { resourceUrl: RESOURCE_URL, network: "stellar:testnet" })
    const answer = await create(receipt)
    expect(answer.status).toBe(200)
    expect(answer.body.sellerReceipt).toEqual(receipt)
  })
})
