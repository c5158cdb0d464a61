import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TESTNET_USDC } from "../src/config.js"
import { ReceiptId, ResourceId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { seededBuyer } from "./fixtures/stellarPayment.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { ledgerAt, refusal, request, startServer, type TypedClient, testConfig, typedClient } from "./support/server.js"

const API_KEY = "receipts-test-key"

/** Seconds a claimed transaction may take to reach the ledger; a made-up one is rejected after it. */
const CONFIRM_TIMEOUT_SECONDS = 4

let fixture: X402Fixture
let ledger: FixtureLedger
beforeAll(async () => {
  fixture = await startX402Fixture()
  ledger = startFixtureLedger()
})
afterAll(() => {
  fixture.stop()
  ledger.stop()
})

const payer = seededBuyer(41).publicKey()

/** A transaction on the fixture ledger paying `to` (the resource's payee by default) the fixture price now. */
const paidOnLedger = (options: { readonly to?: string; readonly visibleAfterMs?: number } = {}) =>
  ledger.addTransaction({
    transfer: { contract: TESTNET_USDC, from: payer, to: options.to ?? FIXTURE_PAY_TO, amount: BigInt(FIXTURE_AMOUNT) },
    closedAt: new Date(Date.now() + (options.visibleAfterMs ?? 0)),
    ...(options.visibleAfterMs !== undefined ? { visibleAfterMs: options.visibleAfterMs } : {})
  })

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
    resource: {
      id: ResourceId.make(id),
      type: "http" as const,
      name: id,
      description: "paid demo",
      url,
      method: "GET" as const,
      capabilities: ["demo.paid"]
    },
    provider: { id: `${id}-provider`, name: id },
    paymentOptions: [option]
  })
  return [entry("fixture.paid", fixture.url("/paid")), entry("fixture.unprobed", fixture.url("/paid/unprobed"))]
}

const purchase = {
  request: { capability: "demo.paid", optimizeFor: "cheapest", intent: "issuer check" },
  payment: {
    network: "stellar:testnet",
    scheme: "exact",
    asset: TESTNET_USDC,
    amount: FIXTURE_AMOUNT,
    transactionHash: "d".repeat(64)
  },
  response: { status: 200, body: '{"issuer":"ok"}' }
} as const

describe("receipts over HTTP", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let store: Database
  const keyed = { authorization: `Bearer ${API_KEY}` }
  /** The buyer's typed client; `post` stays raw for the purchases the contract refuses. */
  let buyer: TypedClient
  const post = (json: unknown) => request(`${server.url}/v1/receipts`, { method: "POST", json, headers: keyed })
  type Purchase = Parameters<TypedClient["receipts"]["create"]>[0]["payload"]
  const create = (payload: Purchase) => buyer.receipts.create({ payload })
  /** The purchase with its payment naming `hash`, and what the resource answered. */
  const paidWith = (hash: string, response: Purchase["response"] = purchase.response) => ({
    ...purchase,
    payment: { ...purchase.payment, transactionHash: hash },
    response
  })
  /** Rows naming a transaction, read from the service's own SQLite file. */
  const rowsFor = (hash: string) => ({
    receipts: store
      .query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM receipts WHERE transaction_hash = ?")
      .get(hash)?.n,
    events: store
      .query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM economic_events WHERE transaction_hash = ?")
      .get(hash)?.n
  })
  beforeAll(async () => {
    const folder = mkdtempSync(join(tmpdir(), "sextant-receipts-http-"))
    const base = testConfig()
    server = await startServer(
      testConfig({
        database: join(folder, "sextant.db"),
        catalog: catalogFor(fixture),
        probes: { ...base.probes, allowPrivateTargets: true },
        signer: { ed25519KeyFile: join(folder, "signer.key") },
        ledger: ledgerAt(ledger, CONFIRM_TIMEOUT_SECONDS),
        apiKeys: [{ principal: "buyer", sha256: apiKeyHash(API_KEY) }],
        // One buyer's payments are the evidence under test here (trust.level3.test.ts covers the threshold).
        verification: { ...base.verification, minDistinctPayers: 1 }
      })
    )
    // Real evidence: a live probe of the fixture's x402 challenge makes it eligible.
    buyer = await typedClient(server.url, keyed)
    const probed = await it.run(
      buyer.verification.validate({ payload: { resourceId: ResourceId.make("fixture.paid") } })
    )
    expect(probed.outcome).toBe("healthy")
    store = new Database(join(folder, "sextant.db"), { readonly: true })
  })
  afterAll(async () => {
    store.close()
    await server.close()
  })

  test("a payment that contradicts the resource's option is refused and neither stored nor counted", async () => {
    // The review's case: pubnet, an unknown asset and a made-up hash for a testnet USDC resource.
    const forged = { network: "stellar:pubnet", scheme: "exact", asset: "NOT-AN-ASSET", amount: FIXTURE_AMOUNT }
    const badHash = await post({ ...purchase, payment: { ...forged, transactionHash: "not-a-real-tx" } })
    expect(badHash).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(badHash.body.message).toContain("payment.transactionHash")
    const upperHash = await post({ ...purchase, payment: { ...purchase.payment, transactionHash: "D".repeat(64) } })
    expect(upperHash.status).toBe(400)

    const hash = "9".repeat(64)
    const cases: ReadonlyArray<readonly [Record<string, string>, string]> = [
      [forged, "payment.network stellar:pubnet disagrees with fixture.paid option 0, whose network is stellar:testnet"],
      [
        { asset: "NOT-AN-ASSET" },
        `payment.asset NOT-AN-ASSET disagrees with fixture.paid option 0, whose asset is ${TESTNET_USDC} (USDC)`
      ],
      [{ scheme: "upto" }, "payment.scheme upto disagrees with fixture.paid option 0, whose scheme is exact"],
      [{ amount: "10001" }, "payment.amount 10001 disagrees with fixture.paid option 0, which charges at most 10000"],
      [
        { maxAmount: "10001" },
        "payment.maxAmount 10001 disagrees with fixture.paid option 0, which charges at most 10000"
      ]
    ]
    for (const [change, message] of cases) {
      const refused = await refusal(
        create({ ...purchase, payment: { ...purchase.payment, ...change, transactionHash: hash } })
      )
      expect("error" in refused && { _tag: refused._tag, error: refused.error, message: refused.message }).toEqual({
        _tag: "PaymentMismatch",
        error: "PAYMENT_MISMATCH",
        message
      })
    }
    expect(rowsFor(hash)).toEqual({ receipts: 0, events: 0 })
    expect((await detail()).resource).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2 })

    // The configured symbol names the configured contract, and a lower amount fits an exact price.
    const { transactionHash: _none, ...unhashed } = purchase.payment
    const bySymbol = await it.run(create({ ...purchase, payment: { ...unhashed, asset: "USDC", amount: "9000" } }))
    expect(bySymbol.payment).toMatchObject({ asset: "USDC", amount: "9000", maxAmount: "9000", transactionHash: null })
  })

  test("POST /v1/receipts answers a signed receipt that verifies offline, and GET returns it unchanged", async () => {
    const created = await it.run(buyer.receipts.create({ payload: purchase }))
    expect(created).toMatchObject({
      payment: { protocol: "x402", maxAmount: FIXTURE_AMOUNT, transactionHash: "d".repeat(64) },
      service: { resourceId: "fixture.paid" },
      signatureAlgorithm: "ed25519"
    })
    expect(verifyReceipt(created).valid).toBe(true)

    const id = { path: { id: created.receiptId } }
    expect(await it.run(buyer.receipts.get(id))).toEqual(created)
    expect(await it.run(buyer.receipts.verify(id))).toMatchObject({
      receiptId: created.receiptId,
      valid: true,
      algorithm: "ed25519",
      signer: created.serviceSigner
    })

    const signer = await it.run(buyer.receipts.signer())
    expect(signer).toMatchObject({ mode: "ed25519", publicKey: created.serviceSigner, offlineVerifiable: true })
    expect(signer.stellarPublicKey).toMatch(/^G[A-Z2-7]{55}$/)

    // The receipt is the buyer's record: signed and stored, but its made-up hash proves nothing yet.
    expect((await detail()).resource).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2 })
  })

  const detail = () => it.run(buyer.resources.get({ path: { id: ResourceId.make("fixture.paid") } }))
  const evidenceOf = (body: { economicEvidence: ReadonlyArray<{ transactionHash: string | null }> }, hash: string) =>
    body.economicEvidence.find((e) => e.transactionHash === hash) as
      | { state: string; reason: string; ledger: number | null }
      | undefined
  const settledEvidence = (hash: string) =>
    pollUntil(
      "the payment's evidence leaves pending",
      detail,
      (body) => !["pending", undefined].includes(evidenceOf(body, hash)?.state),
      {
        timeoutMs: (CONFIRM_TIMEOUT_SECONDS + 4) * 1000
      }
    )

  const routeNeedingTransactions = () =>
    it.run(
      buyer.policy.route({ payload: { capability: "demo.paid", constraints: { requireTransactionVerified: true } } })
    )

  test("a made-up transaction hash is pending, then rejected with its reason, and never lifts the resource", async () => {
    const hash = "d".repeat(64)
    await it.run(create(paidWith(hash)))
    expect(evidenceOf(await detail(), hash)?.state).toBe("pending")
    const after = await settledEvidence(hash)
    expect(evidenceOf(after, hash)).toMatchObject({ state: "rejected", ledger: null })
    expect(evidenceOf(after, hash)?.reason).toContain("not found on the ledger")
    expect(after.resource).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2 })
    expect(after.metrics.transactionSuccessRate).toBe(0)
    // A route that needs transaction evidence still does not select it.
    expect((await routeNeedingTransactions()).selected).toBeNull()
    const observations = await it.run(
      buyer.verification.observations({ path: { id: ResourceId.make("fixture.paid") }, urlParams: {} })
    )
    expect(observations.economic.find((e) => e.transactionHash === hash)?.state).toBe("rejected")
  }, 20_000)

  test("a transaction that pays someone else is rejected, saying what it holds", async () => {
    const hash = paidOnLedger({ to: seededBuyer(42).publicKey() })
    await it.run(create(paidWith(hash)))
    const after = await settledEvidence(hash)
    expect(evidenceOf(after, hash)?.state).toBe("rejected")
    expect(evidenceOf(after, hash)?.reason).toContain(
      `does not pay ${FIXTURE_AMOUNT} of ${TESTNET_USDC} to ${FIXTURE_PAY_TO}`
    )
    expect(after.resource.verificationLevel).toBe(2)
  }, 20_000)

  test("a transaction that appears on the ledger 2 s late goes pending, then confirmed, and lifts the resource to level 3", async () => {
    const hash = paidOnLedger({ visibleAfterMs: 2_000 })
    await it.run(create(paidWith(hash)))
    await Bun.sleep(1_000)
    const early = await detail()
    expect(evidenceOf(early, hash)?.state).toBe("pending")
    expect(early.resource.verificationLevel).toBe(2)
    const after = await settledEvidence(hash)
    expect(evidenceOf(after, hash)).toMatchObject({ state: "confirmed", ledger: ledger.latestLedger() })
    expect(after.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    expect(after.metrics.transactionSuccessRate).toBe(1)
    expect<unknown>((await routeNeedingTransactions()).selected?.resourceId).toBe("fixture.paid")
  }, 20_000)

  test("unknown receipts are 404 {error, message} on read and verify", async () => {
    const id = { path: { id: ReceiptId.make("rcpt_missing") } }
    for (const missing of await Promise.all([refusal(buyer.receipts.get(id)), refusal(buyer.receipts.verify(id))])) {
      expect("error" in missing && { _tag: missing._tag, error: missing.error, message: missing.message }).toEqual({
        _tag: "NotFound",
        error: "NOT_FOUND",
        message: 'no receipt with id "rcpt_missing"'
      })
    }
  })

  test("receipts naming one transaction are each signed and stored, but the transaction counts once", async () => {
    const metrics = async () =>
      (await it.run(buyer.verification.metrics({ path: { id: ResourceId.make("fixture.paid") } })))
        .transactionSuccessRate
    const paid = (hash: string, status: number) => it.run(create(paidWith(hash, { status, body: "x" })))
    const hash = paidOnLedger()
    const first = await paid(hash, 200)
    expect(evidenceOf(await settledEvidence(hash), hash)?.state).toBe("confirmed")
    const rate = await metrics()
    expect(rate).toBe(1)
    // A repeat that claims the call failed would lower the success rate if it counted.
    const repeat = await paid(hash, 502)
    expect(repeat.receiptId).not.toBe(first.receiptId)
    expect(verifyReceipt(repeat).valid).toBe(true)
    expect(await it.run(buyer.receipts.get({ path: { id: repeat.receiptId } }))).toEqual(repeat)
    expect(rowsFor(hash)).toEqual({ receipts: 2, events: 1 })
    expect(await metrics()).toBe(rate)
    // A failure is the buyer's word under a new transaction too: stored as rejected, never counted.
    const failedHash = paidOnLedger()
    await paid(failedHash, 502)
    const failed = evidenceOf(await detail(), failedHash)
    expect(failed).toMatchObject({ state: "rejected" })
    expect(failed?.reason).toContain("a failure a buyer reports is not evidence")
    expect(await metrics()).toBe(rate)
  }, 20_000)

  test("creation needs the API key when keys are configured; bad purchases are 400 and ineligible ones 422", async () => {
    expect(await refusal(server.client.receipts.create({ payload: purchase }))).toMatchObject({ error: "UNAUTHORIZED" })

    const noHash = await post({ ...purchase, response: { status: 200 } })
    expect(noHash).toMatchObject({ status: 400, body: { error: "INVALID_REQUEST" } })
    expect(noHash.body.message).toContain("bodySha256")

    const badAmount = await post({ ...purchase, payment: { ...purchase.payment, amount: "0.5" } })
    expect(badAmount.status).toBe(400)
    expect(badAmount.body.message).toContain("amount")

    // Nesting that would overflow a recursive serialiser is refused, not answered with a 500.
    let deep: unknown = "issuer check"
    for (let i = 0; i < 20_000; i++) deep = { intent: deep }
    const tooDeep = await post({ ...purchase, request: { ...purchase.request, intent: deep } })
    expect(tooDeep.status).toBe(400)
    expect(tooDeep.body.error).toEqual(expect.any(String))

    const notOffered = await refusal(create({ ...purchase, resourceId: ResourceId.make("fixture.unprobed") }))
    expect(notOffered).toMatchObject({ error: "NO_ELIGIBLE_PROVIDER" })
  })
})

describe("receipts over HTTP with the live router", () => {
  test("with no probe evidence nothing is eligible: 422 NO_ELIGIBLE_PROVIDER, and HMAC mode is disclosed", async () => {
    const server = await startServer(
      testConfig({ catalog: catalogFor(fixture), signer: { hmacSecret: "an hmac secret of some length" } })
    )
    try {
      const refused = await refusal(server.client.receipts.create({ payload: purchase }))
      expect(refused).toMatchObject({ error: "NO_ELIGIBLE_PROVIDER", message: expect.stringContaining("demo.paid") })
      const signer = await it.run(server.client.receipts.signer())
      expect(signer).toMatchObject({ mode: "hmac-sha256", publicKey: null, offlineVerifiable: false })
      expect(JSON.stringify(signer)).not.toContain("an hmac secret")
    } finally {
      await server.close()
    }
  })
})
