import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Transaction } from "@stellar/stellar-sdk"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { networkPassphrase } from "../src/domain/stellar.js"
import {
  buildExactPayment,
  exactRequirements,
  credentialFormsOf as formOf,
  seededBuyer,
  settleBody
} from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { refusal } from "./support/server.js"

type Stack = Awaited<ReturnType<typeof startSellerStack>>
type SettleRequest = Parameters<Stack["server"]["client"]["x402"]["settle"]>[0]["payload"]
/** The calls these tests make, all well-formed: each refusal is the service's judgement, decoded as its error class. */
const callsOf = (stack: () => Stack) => ({
  validate: () =>
    stack().server.client.verification.validate({ payload: { resourceId: ResourceId.make(RESOURCE_ID) } }),
  verify: (payload: SettleRequest) => stack().server.client.x402.verify({ payload, headers: {} }),
  settle: (payload: SettleRequest) => stack().server.client.x402.settle({ payload, headers: {} }),
  settlements: (state?: "failed") => stack().server.client.x402.settlements({ urlParams: state ? { state } : {} })
})

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
  const pay = (validUntilLedger: number) =>
    buildExactPayment(requirements, { buyer, form, validUntilLedger: stack.ledger.latestLedger() + validUntilLedger })
  const { validate, verify, settle, settlements } = callsOf(() => stack)

  beforeAll(async () => {
    // Room for one sponsored fee per principal in the window: the second settle tests the budget.
    // One buyer's payment is the evidence followed to level 3 here, so one distinct payer suffices.
    stack = await startSellerStack((base) => ({
      budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 },
      verification: { ...base.verification, minDistinctPayers: 1 }
    }))
    expect((await it.run(validate())).healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test("verify, policy refusal, settle, repeat, budget, receipt and level 3", async () => {
    const { backend, ledger } = stack
    const payment = await pay(50)
    expect(formOf(payment)).toEqual([form])
    const body = settleBody(payment, requirements)

    expect(await it.run(verify(body))).toMatchObject({ isValid: true, payer: buyer.publicKey() })
    expect(backend.calls("/verify")).toBe(1)

    // Policy refuses with its own code (403), before any backend call and before the payment is read as anything else.
    const refused = await refusal(
      settle(settleBody(payment, requirements, { servicePolicy: { maxPricePerRequestUsd: 0.0001 } }))
    )
    expect(refused).toMatchObject({ error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" })
    expect(backend.calls("/settle")).toBe(0)

    const settled = await it.run(settle(body))
    expect(settled).toMatchObject({ success: true, payer: buyer.publicKey() })
    expect(ledger.succeeded(settled.transaction)).toBe(true)
    expect(ledger.transfersBetween(buyer.publicKey(), PAY_TO)).toBe(1)

    // The same signed payment again: the stored answer, no second backend call.
    expect(await it.run(settle(body))).toEqual(settled)
    expect(backend.calls("/settle")).toBe(1)
    const [journaled] = (await it.run(settlements())).settlements
    expect(journaled).toMatchObject({ state: "settled", payer: buyer.publicKey(), transaction: settled.transaction })

    // A second payment by the same payer meets the per-principal fee budget.
    const second = await refusal(settle(settleBody(await pay(51), requirements)))
    expect(second).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED" })
    expect(backend.calls("/settle")).toBe(1)

    // A receipt naming the settled transaction is signed.
    const receipt = await it.run(
      stack.server.client.receipts.create({
        payload: {
          request: { capability: "rwa.inspect", optimizeFor: "cheapest" },
          payment: {
            network: "stellar:testnet",
            scheme: "exact",
            asset: requirements.asset,
            amount: requirements.amount,
            transactionHash: settled.transaction
          },
          response: { status: 200, body: "{}" }
        }
      })
    )
    expect(receipt.payment.transactionHash).toBe(settled.transaction)

    // The settlement, confirmed on the ledger (its transfer event, its envelope hashing to its hash), lifts the resource to level 3.
    const after = await pollUntil(
      "the settlement is confirmed on the ledger",
      () => it.run(stack.server.client.resources.get({ path: { id: ResourceId.make(RESOURCE_ID) } })),
      (r) => r.resource.verificationLevel === 3
    )
    expect(after.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
    expect(after.economicEvidence.find((e) => e.source === "settlement")).toMatchObject({
      transactionHash: settled.transaction,
      state: "confirmed"
    })
  }, 30_000)
})

describe("refused credential forms and spent nonces never reach a backend", () => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const requirements = exactRequirements({ payTo: PAY_TO })
  const { validate, verify, settle, settlements } = callsOf(() => stack)
  beforeAll(async () => {
    // A global fee budget of three settles: bogus payments must not spend it.
    stack = await startSellerStack((base) => ({
      budgets: { ...base.budgets, feeCeilingStroops: 1_000, globalFeeStroops: 3_000 }
    }))
    expect((await it.run(validate())).healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test.each([
    ["addressWithDelegates", "DELEGATED_CREDENTIALS_REFUSED", "SOROBAN_CREDENTIALS_ADDRESS_WITH_DELEGATES"],
    ["sourceAccount", "SOURCE_ACCOUNT_CREDENTIALS_REFUSED", "SOROBAN_CREDENTIALS_SOURCE_ACCOUNT"]
  ] as const)(
    "%s credentials: 422 %s at verify and settle, and the facilitator records no call",
    async (form, code, named) => {
      const payment = await buildExactPayment(requirements, {
        buyer: seededBuyer(form === "sourceAccount" ? 61 : 62),
        form
      })
      expect(formOf(payment)).toEqual([form])
      const body = settleBody(payment, requirements)
      const before = stack.backend.requests.length
      for (const answer of [await refusal(verify(body)), await refusal(settle(body))]) {
        expect(answer).toMatchObject({ error: code, message: expect.stringContaining(named) })
      }
      expect(stack.backend.requests.slice(before).filter((r) => r.path !== "/supported")).toEqual([])
    }
  )

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
    const answer = await refusal(settle(settleBody(payment, requirements)))
    expect(answer).toMatchObject({ error: "NONCE_ALREADY_CONSUMED" })
    expect(stack.backend.calls("/settle")).toBe(settlesBefore)
    const [journaled] = (await it.run(settlements("failed"))).settlements
    expect(journaled).toMatchObject({ state: "failed", backendId: null, transaction: null })
    expect(stack.ledger.transfersBetween(buyer.publicKey(), PAY_TO)).toBe(1)
  })

  test("an authorisation valid far beyond maxTimeoutSeconds is 400 AUTHORIZATION_EXPIRES_TOO_LATE, never forwarded, its reservation released", async () => {
    const settlesBefore = stack.backend.calls("/settle")
    // maxTimeoutSeconds 60 allows ceil(60 / 1 s) + 2 = 62 ledgers; this one is valid for a million.
    for (let seed = 80; seed < 85; seed++) {
      const payment = await buildExactPayment(requirements, {
        buyer: seededBuyer(seed),
        validUntilLedger: stack.ledger.latestLedger() + 1_000_000
      })
      const answer = await refusal(settle(settleBody(payment, requirements)))
      expect(answer).toMatchObject({
        error: "AUTHORIZATION_EXPIRES_TOO_LATE",
        message: expect.stringContaining("at most 62")
      })
    }
    expect(stack.backend.calls("/settle")).toBe(settlesBefore)
    // At the bound it is forwarded: five refusals spent none of the three-settle fee budget.
    const atBound = await buildExactPayment(requirements, {
      buyer: seededBuyer(85),
      validUntilLedger: stack.ledger.latestLedger() + 62
    })
    expect(await it.run(settle(settleBody(atBound, requirements)))).toMatchObject({ success: true })
  })

  test("200 settles with bogus payer signatures are 400 INVALID_PAYER_SIGNATURE with no backend call, and the global fee budget stays whole", async () => {
    const settlesBefore = stack.backend.calls("/settle")
    for (let seed = 100; seed < 300; seed++) {
      const payment = await buildExactPayment(requirements, { buyer: seededBuyer(seed), bogusSignature: true })
      expect(await refusal(settle(settleBody(payment, requirements)))).toMatchObject({
        error: "INVALID_PAYER_SIGNATURE"
      })
    }
    expect(stack.backend.calls("/settle")).toBe(settlesBefore)
    const genuine = await buildExactPayment(requirements, {
      buyer: seededBuyer(300),
      validUntilLedger: stack.ledger.latestLedger() + 50
    })
    expect(await it.run(settle(settleBody(genuine, requirements)))).toMatchObject({ success: true })
  })
})

describe("a settle the backend refuses without submitting", () => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const requirements = exactRequirements({ payTo: PAY_TO })
  const { validate, settle, settlements } = callsOf(() => stack)
  const settleAs = async (seed: number) =>
    settle(
      settleBody(
        await buildExactPayment(requirements, {
          buyer: seededBuyer(seed),
          validUntilLedger: stack.ledger.latestLedger() + 50
        }),
        requirements
      )
    )
  beforeAll(async () => {
    // A global fee budget of two settles.
    stack = await startSellerStack((base) => ({
      budgets: { ...base.budgets, feeCeilingStroops: 1_000, globalFeeStroops: 2_000 }
    }))
    expect((await it.run(validate())).healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test("releases its fee reservation: five refusals with no transaction leave room for two real settles, and the third is 429", async () => {
    stack.backend.setMode("invalid")
    for (let seed = 400; seed < 405; seed++) {
      expect(await it.run(await settleAs(seed))).toMatchObject({ success: false, transaction: "" })
    }
    expect((await it.run(settlements("failed"))).settlements).toHaveLength(5)
    stack.backend.setMode("succeed")
    expect(await it.run(await settleAs(405))).toMatchObject({ success: true })
    expect(await it.run(await settleAs(406))).toMatchObject({ success: true })
    expect(await refusal(await settleAs(407))).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED" })
  })
})

describe("a payment signed by another key than its payer's", () => {
  let stack: Awaited<ReturnType<typeof startSellerStack>>
  const requirements = exactRequirements({ payTo: PAY_TO })
  const { validate, settle, settlements } = callsOf(() => stack)
  const victim = seededBuyer(71)
  beforeAll(async () => {
    // Room for one sponsored fee per principal: whoever is keyed on the victim holds the victim's whole budget.
    stack = await startSellerStack((base) => ({
      budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 }
    }))
    expect((await it.run(validate())).healthy).toBe(true)
  })
  afterAll(() => stack.stop())

  test("is not payer-verified: keyed on the shared unverified principal, so the payer's own settle is not starved while it waits", async () => {
    const forged = await buildExactPayment(requirements, {
      buyer: victim,
      signer: seededBuyer(72),
      validUntilLedger: stack.ledger.latestLedger() + 50
    })
    // The forged settle waits on a slow backend, holding its reservation (a fee charged once submitted, either way).
    stack.backend.setSettleDelay(1_500)
    const inFlight = it.run(Effect.either(settle(settleBody(forged, requirements))))
    await pollUntil(
      "the forged settle is reserved",
      () => it.run(settlements()),
      (s) => s.settlements.length === 1
    )
    const [reserved] = (await it.run(settlements())).settlements
    expect(reserved).toMatchObject({ state: "pending", principal: "open:unverified-payer", payer: victim.publicKey() })
    const genuine = await buildExactPayment(requirements, {
      buyer: victim,
      validUntilLedger: stack.ledger.latestLedger() + 50
    })
    const own = await it.run(Effect.either(settle(settleBody(genuine, requirements))))
    expect(own._tag === "Right" ? own.right : own.left).toMatchObject({ success: true, payer: victim.publicKey() })
    expect(await inFlight).toMatchObject({ _tag: "Right" })
    stack.backend.setSettleDelay(0)
  }, 30_000)
})
