import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Transaction } from "@stellar/stellar-sdk"
import { networkPassphrase } from "../src/domain/stellar.js"
import { buildExactPayment, credentialFormsOf as formOf, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { pollUntil } from "./support/poll.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request } from "./support/server.js"

/**
 * A payment whose auth entry uses ADDRESS or ADDRESS_V2 goes through every check alike: verify,
 * settle, policy refusals, budgets, idempotent repeats, receipts and ledger confirmation to level 3.
 * (On stellar-sdk 14.6.1 the V2 settle was 400 MALFORMED_PAYMENT_TRANSACTION, even one policy should refuse.)
 */
describe.each([
  ["address", 51],
  ["addressV2", 52]
] as const)("a payment authorised with %s credentials", (form, seed) => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const buyer = seededBuyer(seed)
  const requirements = exactRequirements({ payTo: PAY_TO })
  const pay = (validUntilLedger: number) => buildExactPayment(requirements, { buyer, form, validUntilLedger: stack.ledger.latestLedger() + validUntilLedger })
  const post = (path: string, json: unknown) => request(`${stack.server.url}${path}`, { method: "POST", json })

  beforeAll(async () => {
    // Room for one sponsored fee per principal in the window: the second settle tests the budget.
    // One buyer's payment is the evidence followed to level 3 here, so one distinct payer suffices.
    stack = await startSellerStack((base) => ({
      budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 },
      verification: { ...base.verification, minDistinctPayers: 1 }
    }))
    expect((await post("/v1/validate", { resourceId: RESOURCE_ID })).body.healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test("verify, policy refusal, settle, repeat, budget, receipt and level 3", async () => {
    const { backend, ledger } = stack
    const payment = await pay(50)
    expect(formOf(payment)).toEqual([form])
    const body = settleBody(payment, requirements)

    expect(await post("/x402/verify", body)).toMatchObject({ status: 200, body: { isValid: true, payer: buyer.publicKey() } })
    expect(backend.calls("/verify")).toBe(1)

    // Policy refuses with its own code (403), before any backend call and before the payment is read as anything else.
    const refused = await post("/x402/settle", settleBody(payment, requirements, { servicePolicy: { maxPricePerRequestUsd: 0.0001 } }))
    expect(refused).toMatchObject({ status: 403, body: { error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" } })
    expect(backend.calls("/settle")).toBe(0)

    const settled = await post("/x402/settle", body)
    expect(settled).toMatchObject({ status: 200, body: { success: true, payer: buyer.publicKey() } })
    expect(ledger.succeeded(settled.body.transaction)).toBe(true)
    expect(ledger.transfersBetween(buyer.publicKey(), PAY_TO)).toBe(1)

    // The same signed payment again: the stored answer, no second backend call.
    expect(await post("/x402/settle", body)).toMatchObject({ status: 200, body: settled.body })
    expect(backend.calls("/settle")).toBe(1)
    const [journaled] = (await request(`${stack.server.url}/x402/settlements`)).body.settlements
    expect(journaled).toMatchObject({ state: "settled", payer: buyer.publicKey(), transaction: settled.body.transaction })

    // A second payment by the same payer meets the per-principal fee budget.
    const second = await post("/x402/settle", settleBody(await pay(51), requirements))
    expect(second).toMatchObject({ status: 429, body: { error: "FEE_BUDGET_EXHAUSTED" } })
    expect(backend.calls("/settle")).toBe(1)

    // A receipt naming the settled transaction is signed.
    const receipt = await post("/v1/receipts", {
      request: { capability: "rwa.inspect", optimizeFor: "cheapest" },
      payment: { network: "stellar:testnet", scheme: "exact", asset: requirements.asset, amount: requirements.amount, transactionHash: settled.body.transaction },
      response: { status: 200, body: "{}" }
    })
    expect(receipt.status).toBe(200)

    // The settlement, confirmed on the ledger (its transfer event, its envelope hashing to its hash), lifts the resource to level 3.
    const after = await pollUntil(
      "the settlement is confirmed on the ledger",
      () => request(`${stack.server.url}/v1/resources/${RESOURCE_ID}`),
      (r) => r.body.resource?.verificationLevel === 3
    )
    expect(after.body.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    expect(after.body.economicEvidence.find((e: { source: string }) => e.source === "settlement")).toMatchObject({
      transactionHash: settled.body.transaction,
      state: "confirmed"
    })
  }, 30_000)
})

describe("refused credential forms and spent nonces never reach a backend", () => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const requirements = exactRequirements({ payTo: PAY_TO })
  const post = (path: string, json: unknown) => request(`${stack.server.url}${path}`, { method: "POST", json })
  beforeAll(async () => {
    // A global fee budget of three settles: bogus payments must not spend it.
    stack = await startSellerStack((base) => ({ budgets: { ...base.budgets, feeCeilingStroops: 1_000, globalFeeStroops: 3_000 } }))
    expect((await post("/v1/validate", { resourceId: RESOURCE_ID })).body.healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test.each([
    ["addressWithDelegates", "DELEGATED_CREDENTIALS_REFUSED", "SOROBAN_CREDENTIALS_ADDRESS_WITH_DELEGATES"],
    ["sourceAccount", "SOURCE_ACCOUNT_CREDENTIALS_REFUSED", "SOROBAN_CREDENTIALS_SOURCE_ACCOUNT"]
  ] as const)("%s credentials: 422 %s at verify and settle, and the facilitator records no call", async (form, code, named) => {
    const payment = await buildExactPayment(requirements, { buyer: seededBuyer(form === "sourceAccount" ? 61 : 62), form })
    expect(formOf(payment)).toEqual([form])
    const body = settleBody(payment, requirements)
    const before = stack.backend.requests.length
    for (const path of ["/x402/verify", "/x402/settle"]) {
      const answer = await post(path, body)
      expect(answer).toMatchObject({ status: 422, body: { error: code } })
      expect(answer.body.message).toContain(named)
    }
    expect(stack.backend.requests.slice(before).filter((r) => r.path !== "/supported")).toEqual([])
  })

  test("a payment whose nonce is already consumed on the ledger is refused 409 NONCE_ALREADY_CONSUMED before forwarding, and released", async () => {
    const buyer = seededBuyer(63)
    const payment = await buildExactPayment(requirements, { buyer, validUntilLedger: stack.ledger.latestLedger() + 50 })
    // The same signed authorisation already executed elsewhere (another facilitator, another service).
    const tx = new Transaction(payment.payload.transaction as string, networkPassphrase("stellar:testnet"))
    const op = tx.operations[0]
    if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
    stack.ledger.submit({ func: op.func, auth: op.auth ?? [] }, {})
    expect(stack.ledger.transfersBetween(buyer.publicKey(), PAY_TO)).toBe(1)
    const settlesBefore = stack.backend.calls("/settle")
    const answer = await post("/x402/settle", settleBody(payment, requirements))
    expect(answer).toMatchObject({ status: 409, body: { error: "NONCE_ALREADY_CONSUMED" } })
    expect(stack.backend.calls("/settle")).toBe(settlesBefore)
    const [journaled] = (await request(`${stack.server.url}/x402/settlements?state=failed`)).body.settlements
    expect(journaled).toMatchObject({ state: "failed", backendId: null, transaction: null })
    expect(stack.ledger.transfersBetween(buyer.publicKey(), PAY_TO)).toBe(1)
  })

  test("200 settles with bogus payer signatures are 400 INVALID_PAYER_SIGNATURE with no backend call, and the global fee budget stays whole", async () => {
    const settlesBefore = stack.backend.calls("/settle")
    for (let seed = 100; seed < 300; seed++) {
      const payment = await buildExactPayment(requirements, { buyer: seededBuyer(seed), bogusSignature: true })
      const answer = await post("/x402/settle", settleBody(payment, requirements))
      expect(answer).toMatchObject({ status: 400, body: { error: "INVALID_PAYER_SIGNATURE" } })
    }
    expect(stack.backend.calls("/settle")).toBe(settlesBefore)
    const genuine = await buildExactPayment(requirements, { buyer: seededBuyer(300), validUntilLedger: stack.ledger.latestLedger() + 50 })
    expect(await post("/x402/settle", settleBody(genuine, requirements))).toMatchObject({ status: 200, body: { success: true } })
  })
})

describe("a settle the backend refuses without submitting", () => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const requirements = exactRequirements({ payTo: PAY_TO })
  const post = (path: string, json: unknown) => request(`${stack.server.url}${path}`, { method: "POST", json })
  const settleAs = async (seed: number) =>
    post("/x402/settle", settleBody(await buildExactPayment(requirements, { buyer: seededBuyer(seed), validUntilLedger: stack.ledger.latestLedger() + 50 }), requirements))
  beforeAll(async () => {
    // A global fee budget of two settles.
    stack = await startSellerStack((base) => ({ budgets: { ...base.budgets, feeCeilingStroops: 1_000, globalFeeStroops: 2_000 } }))
    expect((await post("/v1/validate", { resourceId: RESOURCE_ID })).body.healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test("releases its fee reservation: five refusals with no transaction leave room for two real settles, and the third is 429", async () => {
    stack.backend.setMode("invalid")
    for (let seed = 400; seed < 405; seed++) {
      expect(await settleAs(seed)).toMatchObject({ status: 200, body: { success: false, transaction: "" } })
    }
    const failed = (await request(`${stack.server.url}/x402/settlements?state=failed`)).body.settlements
    expect(failed).toHaveLength(5)
    stack.backend.setMode("succeed")
    expect(await settleAs(405)).toMatchObject({ status: 200, body: { success: true } })
    expect(await settleAs(406)).toMatchObject({ status: 200, body: { success: true } })
    expect(await settleAs(407)).toMatchObject({ status: 429, body: { error: "FEE_BUDGET_EXHAUSTED" } })
  })
})
