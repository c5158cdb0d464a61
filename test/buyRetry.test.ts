import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import { declarePaymentIdentifierExtension } from "@x402/extensions/payment-identifier"
import { paymentMiddleware } from "@x402/hono"
import { Effect, Schema } from "effect"
import { Hono } from "hono"
import { Buyer, BuyerClientLive } from "../src/client/index.js"
import { defaultSpendLedgerFile, SpendLedger } from "../src/client/SpendLedger.js"
import { ProbesConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import { loadOrCreateBuyerKey } from "../src/keys/stellarKey.js"
import { payFor } from "../src/payments/payFor.js"
import { stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { startDroppingProxy } from "./fixtures/droppingProxy.js"
import { it } from "./support/effectTest.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { ledgerAt, testConfig } from "./support/server.js"

/**
 * Resends that cannot pay twice: stock @x402/hono 2.27 sellers settling through Sextant (a fixture
 * facilitator behind it, settling on a fixture ledger), each behind a loopback proxy that lets the
 * first paid request reach the seller, waits until the seller has settled and answered, and then
 * drops the buyer's connection. The buyer cannot know whether it paid.
 */
let stack: Awaited<ReturnType<typeof startSellerStack>>
const sellers: Array<ReturnType<typeof Bun.serve>> = []
const proxies: Array<{ readonly close: () => Promise<void> }> = []

/** The seller's front: drops the connection of its first paid request after the seller answered it. */
const droppingSellerFront = async (upstream: string) => {
  const front = await startDroppingProxy((_method, _path, headers) => headers.has("payment-signature"), upstream)
  proxies.push(front)
  return { url: `${front.url}/weather`, seen: front.seen }
}

/** A stock seller of GET /weather paying the stack's payee, with or without the payment-identifier extension. */
const stockSeller = (facilitatorUrl: string, offersIdentifier: boolean) => {
  const core = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl })).register(
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
          mimeType: "application/json",
          ...(offersIdentifier
            ? { extensions: { "payment-identifier": declarePaymentIdentifierExtension(false) } }
            : {})
        }
      },
      core
    )
  )
  app.get("/weather", (c) => c.json({ tempC: 21 }))
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch })
  sellers.push(server)
  return `http://127.0.0.1:${server.port}`
}

/** A stock seller using the stack's service as its facilitator, behind a front that drops its first paid answer. */
const seller = (offersIdentifier: boolean) =>
  droppingSellerFront(stockSeller(`${stack.server.url}/x402`, offersIdentifier))

const buy = (url: string, buyer: Keypair, rpcUrl = stack.ledger.rpcUrl) =>
  Effect.either(
    payFor({
      url,
      method: "GET",
      signer: buyer,
      rpcUrl,
      inclusionFeeStroops: 10_000,
      deployment: { network: "stellar:testnet", assetContract: TESTNET_USDC },
      maxPrice: 1_000_000n,
      outbound: Schema.decodeSync(ProbesConfig)({ trustedOrigins: [new URL(url).origin], timeoutMs: 5000 })
    })
  )

beforeAll(async () => {
  stack = await startSellerStack()
  // Settlement pays a payee with verification evidence: the stack's resource has the same payee.
  expect(
    (
      await it.run(
        stack.server.client.verification.validate({ payload: { resourceId: ResourceId.make(SELLER_RESOURCE_ID) } })
      )
    ).healthy
  ).toBe(true)
})
afterAll(async () => {
  for (const p of proxies) await p.close()
  for (const s of sellers) s.stop(true)
  await stack.stop()
})

describe("a paid request whose connection drops after the seller settled", () => {
  test("the seller offers payment-identifier: the same signed payment is resent with the same identifier, settled once", async () => {
    const { url, seen } = await seller(true)
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 81))
    const settlesBefore = stack.backend.calls("/settle")
    const result = await it.run(buy(url, buyer))
    if (result._tag === "Left")
      throw new Error(`expected a delivered answer, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
    const paid = result.right
    expect(paid.status).toBe(200)
    expect(JSON.parse(paid.body?.toString() ?? "null")).toEqual({ tempC: 21 })
    expect(paid.paymentIdentifier).toMatch(/^sx_[A-Za-z0-9_-]{13,125}$/)
    expect(paid.sends).toBe(2)
    expect(seen).toEqual({ matched: 2, dropped: 1 })
    // One payment on the ledger, one settle forwarded; the resend was answered from Sextant's journal.
    expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
    expect(stack.backend.calls("/settle") - settlesBefore).toBe(1)
    expect(paid.paymentResponse).toMatchObject({ success: true })
    expect(stack.ledger.succeeded(paid.paymentResponse?.transaction ?? "")).toBe(true)
  })

  test("the seller does not offer it: sent once, the outcome reported unknown, never resent", async () => {
    const { url, seen } = await seller(false)
    const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 82))
    const result = await it.run(buy(url, buyer))
    expect(result._tag).toBe("Left")
    if (result._tag === "Right") return
    expect(result.left._tag).toBe("PaymentOutcomeUnknown")
    expect(seen).toEqual({ matched: 1, dropped: 1 })
    // It did settle: exactly why a resend without an identifier could have paid twice.
    expect(stack.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
  })
})

/**
 * The seller's facilitator settles and then drops the connection (a loopback front before the
 * fixture facilitator drops its first settle after the facilitator answered it). A stock seller then
 * answers its buyer 402 with a failed settle naming the lost connection, which a buyer reading "402
 * means refused" would take as unpaid, and pay another seller for.
 */
describe("a seller whose facilitator settles and then drops the connection", () => {
  let dropping: Awaited<ReturnType<typeof startSellerStack>>
  let front: Awaited<ReturnType<typeof startDroppingProxy>>
  const listed: Array<CatalogEntry> = []
  const folder = mkdtempSync(join(tmpdir(), "sextant-retry-"))

  beforeAll(async () => {
    front = await startDroppingProxy((_method, path) => path === "/settle")
    proxies.push(front)
    // Two stock sellers settling through that facilitator, listed in the service's catalog for `Buyer.buy` to route to.
    for (const offersIdentifier of [true, false])
      listed.push(retryEntry(stockSeller(front.url, offersIdentifier), offersIdentifier))
    dropping = await startSellerStack((_base, _ledger, backend) => {
      front.forwardTo(backend.url)
      return { facilitators: [{ id: "fixture", url: front.url }], catalog: listed }
    })
    for (const id of [SELLER_RESOURCE_ID, ...listed.map((entry) => entry.resource.id)]) {
      expect(
        (await it.run(dropping.server.client.verification.validate({ payload: { resourceId: ResourceId.make(id) } })))
          .healthy
      ).toBe(true)
    }
  })
  afterAll(async () => {
    await dropping.stop()
  })
  const dropNextSettle = () => {
    front.seen.dropped = 0
    front.seen.matched = 0
  }

  it.live(
    "with payment-identifier: the same payment is resent under the same identifier, answered from the first settlement; one transfer",
    () =>
      Effect.gen(function* () {
        dropNextSettle()
        const url = `${stockSeller(front.url, true)}/weather`
        const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 83))
        const result = yield* buy(url, buyer, dropping.ledger.rpcUrl)
        if (result._tag === "Left")
          throw new Error(`expected a delivered answer, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
        expect(front.seen).toEqual({ matched: 2, dropped: 1 })
        expect(result.right.sends).toBe(2)
        expect(result.right.status).toBe(200)
        expect(JSON.parse(result.right.body?.toString() ?? "null")).toEqual({ tempC: 21 })
        const settles = dropping.backend.requests.filter((r) => r.path === "/settle").slice(-2)
        const identifierOf = (body: unknown) =>
          JSON.stringify((body as { paymentPayload: { extensions?: unknown } }).paymentPayload.extensions)
        // One signed payment, one identifier, sent twice; one transfer on the ledger.
        expect(identifierOf(settles[0]?.body)).toBe(identifierOf(settles[1]?.body))
        expect(identifierOf(settles[0]?.body)).toContain(result.right.paymentIdentifier ?? "missing")
        expect(dropping.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
        expect(dropping.ledger.succeeded(result.right.paymentResponse?.transaction ?? "")).toBe(true)
      })
  )

  it.live(
    "without it: sent once and reported unknown, never refused (another seller would be a second payment); one transfer",
    () =>
      Effect.gen(function* () {
        dropNextSettle()
        const url = `${stockSeller(front.url, false)}/weather`
        const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 84))
        const result = yield* buy(url, buyer, dropping.ledger.rpcUrl)
        expect(front.seen).toEqual({ matched: 1, dropped: 1 })
        if (result._tag === "Right")
          throw new Error(
            `expected an unknown outcome, got ${result.right.status} ${JSON.stringify(result.right.paymentResponse)}`
          )
        expect(result.left._tag).toBe("PaymentOutcomeUnknown")
        expect(dropping.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
      })
  )

  it.live(
    "with Sextant between the seller and that facilitator, the seller never sees the drop: delivered on the first send, one transfer",
    () =>
      Effect.gen(function* () {
        dropNextSettle()
        const url = `${stockSeller(`${dropping.server.url}/x402`, false)}/weather`
        const buyer = Keypair.fromRawEd25519Seed(Buffer.alloc(32, 85))
        const result = yield* buy(url, buyer, dropping.ledger.rpcUrl)
        if (result._tag === "Left")
          throw new Error(`expected a delivered answer, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
        expect(front.seen.dropped).toBe(1)
        expect(result.right.sends).toBe(1)
        expect(result.right.status).toBe(200)
        expect(dropping.ledger.transfersBetween(buyer.publicKey(), SELLER_PAY_TO)).toBe(1)
      })
  )

  /** `Buyer.buy` (what `sextant buy` runs) for `capability` with a fresh buyer key; its spend ledger read back after. */
  const buyAs = async (capability: string) => {
    const keyFile = join(folder, `${capability}.key`)
    const key = await it.run(loadOrCreateBuyerKey(keyFile))
    const base = testConfig()
    const config = testConfig({
      ledger: ledgerAt(dropping.ledger),
      buyer: { ...base.buyer, keyFile, allowPrivateTargets: true, maxUsdPerWindow: 0.01, windowSeconds: 3600 }
    })
    const result = await it.run(
      Effect.either(
        Effect.flatMap(Buyer, (buyer) => buyer.buy({ capability, input: {}, policy: { maxPricePerRequestUsd: 0.002 } }))
      ).pipe(Effect.provide(BuyerClientLive(config, { keyFile, service: dropping.server.url })))
    )
    const spend = SpendLedger.layer({ file: defaultSpendLedgerFile(keyFile), windowSeconds: 3600, limit: 100_000n })
    const [spent, identifiers] = await it.run(
      Effect.flatMap(SpendLedger, (ledger) =>
        Effect.all([ledger.spent(key.address), ledger.identifiers(key.address)])
      ).pipe(Effect.provide(spend))
    )
    return { result, spent, identifiers, payer: key.address }
  }

  test("Buyer.buy: the resend is one purchase, charged once to the spend window under its identifier", async () => {
    dropNextSettle()
    const { result, spent, identifiers, payer } = await buyAs("demo.retry.identified")
    if (result._tag === "Left")
      throw new Error(`expected a purchase, got ${result.left._tag}: ${JSON.stringify(result.left)}`)
    expect(result.right.data).toEqual({ tempC: 21 })
    expect(result.right.attempts.map((a) => [a.outcome, a.sends])).toEqual([["paid", 2]])
    expect(spent).toBe(10_000n)
    expect(identifiers).toEqual([result.right.attempts[0]?.paymentIdentifier ?? "missing"])
    expect(dropping.ledger.transfersBetween(payer, SELLER_PAY_TO)).toBe(1)
  })

  test("Buyer.buy without the extension: the purchase stops unknown (no other seller tried, nothing resent), charged once", async () => {
    dropNextSettle()
    const { result, spent, identifiers, payer } = await buyAs("demo.retry.plain")
    if (result._tag === "Right") throw new Error("expected an unknown outcome")
    expect(result.left._tag).toBe("OutcomeUnknown")
    const attempts = "attempts" in result.left ? result.left.attempts : []
    expect(attempts.map((a) => a.outcome)).toEqual(["unknown"])
    expect(attempts[0]?.reason).toContain("not resent")
    expect(front.seen).toEqual({ matched: 1, dropped: 1 })
    // Counted once, at the routed ceiling: the most the signed payment can move.
    expect(spent).toBe(10_000n)
    expect(identifiers).toEqual([])
    expect(dropping.ledger.transfersBetween(payer, SELLER_PAY_TO)).toBe(1)
  })
})

/** A catalog entry for a stock seller of GET /weather at `origin`, in its own capability. */
const retryEntry = (origin: string, offersIdentifier: boolean): CatalogEntry => {
  const id = offersIdentifier ? "retry.identified" : "retry.plain"
  return {
    resource: {
      id: ResourceId.make(id),
      type: "http",
      name: "Weather",
      description: "A stock @x402/hono seller",
      url: `${origin}/weather`,
      method: "GET",
      capabilities: [`demo.${id}`]
    },
    provider: { id: id.replace(".", "-"), name: "Retry seller" },
    paymentOptions: [
      {
        network: "stellar:testnet",
        scheme: "exact",
        asset: TESTNET_USDC,
        amount: "10000",
        amountUsd: 0.001,
        payTo: SELLER_PAY_TO
      }
    ]
  }
}
