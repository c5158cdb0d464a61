import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { seededBuyer } from "./fixtures/stellarPayment.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { ledgerAt, startServer, type TypedClient, testConfig, typedClient } from "./support/server.js"

/**
 * Level 3 bought for the price of a self-payment, on the rules before the trust model: receipt
 * evidence was confirmed by any ledger transfer of the right amount to the payee within the
 * window, the payer unbound, so a provider paid itself (or from a second account it had just
 * funded) and earned TRANSACTION_VERIFIED; one buyer was enough, and one transaction counted for
 * every resource with that payee and price. Receipts here, on a fixture ledger, default config
 * (verification.minDistinctPayers 2).
 */
const API_KEY = "level3-test-key"
const keyed = { authorization: `Bearer ${API_KEY}` }
let fixture: X402Fixture
let ledger: FixtureLedger
let server: Awaited<ReturnType<typeof startServer>>
/** The buyer's typed client, sending its API key. */
let buyer: TypedClient

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
    capabilities: [`demo.${id}`]
  },
  provider: { id: `${id}-provider`, name: id },
  paymentOptions: [option]
})

beforeAll(async () => {
  fixture = await startX402Fixture()
  ledger = startFixtureLedger()
  const folder = mkdtempSync(join(tmpdir(), "sextant-level3-"))
  const base = testConfig()
  server = await startServer(
    testConfig({
      database: join(folder, "sextant.db"),
      catalog: [entry("one", fixture.url("/paid/one")), entry("two", fixture.url("/paid/two"))],
      probes: { ...base.probes, allowPrivateTargets: true },
      signer: { ed25519KeyFile: join(folder, "signer.key") },
      ledger: ledgerAt(ledger, 4),
      apiKeys: [{ principal: "buyer", sha256: apiKeyHash(API_KEY) }]
    })
  )
  buyer = await typedClient(server.url, keyed)
  for (const id of ["one", "two"]) {
    const probed = await it.run(buyer.verification.validate({ payload: { resourceId: ResourceId.make(id) } }))
    expect(probed.outcome).toBe("healthy")
  }
})
afterAll(async () => {
  await server.close()
  await fixture.stop()
  ledger.stop()
})

/** A transfer of the fixture price on the ledger, now. */
const pays = (from: string, to = FIXTURE_PAY_TO) =>
  ledger.addTransaction({
    transfer: { contract: TESTNET_USDC, from, to, amount: BigInt(FIXTURE_AMOUNT) },
    closedAt: new Date()
  })
/** The buyer's receipt of a paid call to `resourceId` in that transaction. */
const receipt = (resourceId: string, transactionHash: string) =>
  it.run(
    buyer.receipts.create({
      payload: {
        request: { capability: `demo.${resourceId}`, optimizeFor: "cheapest", intent: "a paid call" },
        resourceId: ResourceId.make(resourceId),
        payment: {
          network: "stellar:testnet",
          scheme: "exact",
          asset: TESTNET_USDC,
          amount: FIXTURE_AMOUNT,
          transactionHash
        },
        response: { status: 200, body: '{"ok":true}' }
      }
    })
  )
const detail = (id: string) => it.run(server.client.resources.get({ path: { id: ResourceId.make(id) } }))
const evidenceOf = (body: Awaited<ReturnType<typeof detail>>, hash: string) =>
  body.economicEvidence.find((e) => e.transactionHash === hash)
const settled = (id: string, hash: string) =>
  pollUntil(
    "the payment's evidence leaves pending",
    () => detail(id),
    (body) => !["pending", undefined].includes(evidenceOf(body, hash)?.state),
    {
      timeoutMs: 10_000
    }
  )

describe("level 3 bound to real buyers", () => {
  test("a payment from the payee to itself earns nothing", async () => {
    const hash = pays(FIXTURE_PAY_TO)
    expect((await receipt("one", hash)).receiptId).toBeString()
    const after = await settled("one", hash)
    expect(evidenceOf(after, hash)).toMatchObject({ state: "rejected" })
    expect(evidenceOf(after, hash)?.reason).toContain("is a payment from the payee")
    expect(after.resource.verificationLevel).toBe(2)
  }, 20_000)

  test("a payer the payee funded within the window earns nothing", async () => {
    const sock = seededBuyer(90).publicKey()
    // The payee hands its second account the money a ledger earlier, then "buys" from itself.
    ledger.emitTransfer({ contract: TESTNET_USDC, from: FIXTURE_PAY_TO, to: sock, amount: BigInt(FIXTURE_AMOUNT) })
    ledger.advanceLedgers(1)
    const hash = pays(sock)
    expect((await receipt("one", hash)).receiptId).toBeString()
    const after = await settled("one", hash)
    expect(evidenceOf(after, hash)).toMatchObject({ state: "rejected" })
    expect(evidenceOf(after, hash)?.reason).toContain(`payer ${sock} was funded by the payee`)
    expect(after.resource.verificationLevel).toBe(2)
  }, 20_000)

  test("one independent buyer is not enough; a second distinct payer lifts the resource; a transaction counts for one resource", async () => {
    const first = pays(seededBuyer(91).publicKey())
    expect((await receipt("one", first)).receiptId).toBeString()
    const once = await settled("one", first)
    expect(evidenceOf(once, first)?.state).toBe("confirmed")
    expect(once.resource.verificationLevel).toBe(2)
    expect(once.metrics.transactionSuccessRate).toBe(0)

    // The same transaction claimed for the payee's other resource is no evidence about it.
    expect((await receipt("two", first)).receiptId).toBeString()
    const claimed = await settled("two", first)
    expect(
      claimed.economicEvidence.find((e) => e.transactionHash === first && e.state === "rejected")?.reason
    ).toContain("already counts for resource one")

    const second = pays(seededBuyer(92).publicKey())
    expect((await receipt("one", second)).receiptId).toBeString()
    const twice = await settled("one", second)
    expect(evidenceOf(twice, second)?.state).toBe("confirmed")
    const lifted = await pollUntil(
      "the resource reaches level 3",
      () => detail("one"),
      (d) => d.resource.verificationLevel === 3
    )
    expect(lifted.resource.status).toBe("TRANSACTION_VERIFIED")
    expect(lifted.metrics.transactionSuccessRate).toBe(1)
    expect((await detail("two")).resource.verificationLevel).toBe(2)
  }, 30_000)
})
