/**
 * Sextant's refusals as the stock @x402/core 2.27 HTTPFacilitatorClient reads them: each one raises
 * SettleError / VerifyError carrying the x402 reason, and the same body still decodes as this
 * service's {error, message} (plus `code` on a policy denial).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Transaction } from "@stellar/stellar-sdk"
import { HTTPFacilitatorClient } from "@x402/core/server"
import { type PaymentPayload, type PaymentRequirements, SettleError, VerifyError } from "@x402/core/types"
import { Schema } from "effect"
import { ErrorBody } from "../src/domain/errors.js"
import { ResourceId } from "../src/domain/ids.js"
import { networkPassphrase } from "../src/domain/stellar.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request } from "./support/server.js"

const UNLISTED_PAYEE = "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57"

let stack: Awaited<ReturnType<typeof startSellerStack>>
let client: HTTPFacilitatorClient
const requirements = exactRequirements({ payTo: PAY_TO })

beforeAll(async () => {
  // Room for one sponsored fee per payer in the window: a payer's second settle meets the budget.
  stack = await startSellerStack((base) => ({
    budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 }
  }))
  client = new HTTPFacilitatorClient({ url: `${stack.server.url}/x402` })
  const probe = await it.run(
    stack.server.client.verification.validate({ payload: { resourceId: ResourceId.make(RESOURCE_ID) } })
  )
  if (probe.healthy !== true) throw new Error(`the seller did not probe healthy: ${JSON.stringify(probe)}`)
})
afterAll(() => stack.stop())

const failureOf = async (call: Promise<unknown>) => {
  try {
    await call
  } catch (error) {
    return error
  }
  throw new Error("the call was expected to fail")
}

/** The stock client's settle and the raw body of the same request, which must still be this service's error body. */
const settleRefused = async (payment: PaymentPayload, paid: PaymentRequirements) => {
  const error = await failureOf(client.settle(payment, paid))
  expect(error).toBeInstanceOf(SettleError)
  // Raw: the body on the wire is checked against the error schema, not a decoded answer.
  const raw = await request(`${stack.server.url}/x402/settle`, { method: "POST", json: settleBody(payment, paid) })
  expect(Schema.decodeUnknownEither(ErrorBody)(raw.body)._tag).toBe("Right")
  return { error: error as SettleError, raw }
}

const verifyRefused = async (payment: PaymentPayload, paid: PaymentRequirements) => {
  const error = await failureOf(client.verify(payment, paid))
  expect(error).toBeInstanceOf(VerifyError)
  return error as VerifyError
}

const backendCalls = () => stack.backend.requests.filter((r) => r.path !== "/supported").length

describe("the stock HTTPFacilitatorClient reads every refusal", () => {
  test("an amount other than the requirements': SettleError invalid_exact_stellar_payload_wrong_amount, 400, the payer named", async () => {
    const buyer = seededBuyer(71)
    const payment = await buildExactPayment(requirements, { buyer, transfer: { amount: "9999" } })
    const before = backendCalls()
    const { error, raw } = await settleRefused(payment, requirements)
    expect(error).toMatchObject({
      statusCode: 400,
      errorReason: "invalid_exact_stellar_payload_wrong_amount",
      payer: buyer.publicKey(),
      transaction: "",
      network: "stellar:testnet"
    })
    expect(error.errorMessage).toContain("9999")
    expect(raw.status).toBe(400)
    expect(raw.body).toMatchObject({
      error: "TRANSFER_AMOUNT_MISMATCH",
      message: error.errorMessage,
      success: false,
      extensions: { sextant: { error: "TRANSFER_AMOUNT_MISMATCH", message: error.errorMessage } }
    })
    expect(backendCalls()).toBe(before)
  })

  test("another payee than the requirements': invalid_exact_stellar_payload_wrong_recipient", async () => {
    const payment = await buildExactPayment(requirements, { buyer: seededBuyer(72), transfer: { to: UNLISTED_PAYEE } })
    const { error, raw } = await settleRefused(payment, requirements)
    expect(error).toMatchObject({ statusCode: 400, errorReason: "invalid_exact_stellar_payload_wrong_recipient" })
    expect(raw.body).toMatchObject({ error: "TRANSFER_RECIPIENT_MISMATCH" })
  })

  test("a payee with no verification evidence: 403, the policy's code kept beside the reason", async () => {
    const unlisted = exactRequirements({ payTo: UNLISTED_PAYEE })
    const payment = await buildExactPayment(unlisted, { buyer: seededBuyer(73) })
    const { error, raw } = await settleRefused(payment, unlisted)
    expect(error).toMatchObject({ statusCode: 403, errorReason: "policy_denied" })
    expect(raw.body).toMatchObject({
      error: "POLICY_DENIED",
      code: "NO_VERIFICATION_EVIDENCE",
      extensions: { sextant: { code: "NO_VERIFICATION_EVIDENCE" } }
    })
  })

  test("a buyer's price limit: 403 policy_denied with PRICE_EXCEEDS_LIMIT", async () => {
    const limited = { ...requirements, servicePolicy: { maxPricePerRequestUsd: 0.0001 } } as PaymentRequirements
    const payment = await buildExactPayment(requirements, { buyer: seededBuyer(74) })
    const { error, raw } = await settleRefused(payment, limited)
    expect(error).toMatchObject({ statusCode: 403, errorReason: "policy_denied" })
    expect(raw.body).toMatchObject({ error: "POLICY_DENIED", code: "PRICE_EXCEEDS_LIMIT" })
  })

  test("a bogus payer signature: 400 invalid_exact_stellar_payload_missing_payer_signature, no payer claimed", async () => {
    const payment = await buildExactPayment(requirements, { buyer: seededBuyer(75), bogusSignature: true })
    const { error, raw } = await settleRefused(payment, requirements)
    expect(error).toMatchObject({
      statusCode: 400,
      errorReason: "invalid_exact_stellar_payload_missing_payer_signature",
      payer: undefined
    })
    expect(raw.body).toMatchObject({ error: "INVALID_PAYER_SIGNATURE" })
  })

  test("delegated credentials: 422 invalid_exact_stellar_payload_unsupported_credential_type at verify and settle", async () => {
    const payment = await buildExactPayment(requirements, { buyer: seededBuyer(76), form: "addressWithDelegates" })
    const { error } = await settleRefused(payment, requirements)
    expect(error).toMatchObject({
      statusCode: 422,
      errorReason: "invalid_exact_stellar_payload_unsupported_credential_type"
    })
    const refused = await verifyRefused(payment, requirements)
    expect(refused).toMatchObject({
      statusCode: 422,
      invalidReason: "invalid_exact_stellar_payload_unsupported_credential_type"
    })
  })

  test("a nonce already spent on the ledger: 409 nonce_already_consumed", async () => {
    const buyer = seededBuyer(77)
    const payment = await buildExactPayment(requirements, { buyer, validUntilLedger: stack.ledger.latestLedger() + 50 })
    const tx = new Transaction(payment.payload.transaction, networkPassphrase("stellar:testnet"))
    const op = tx.operations[0]
    if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
    stack.ledger.submit({ func: op.func, auth: op.auth ?? [] }, {})
    const { error, raw } = await settleRefused(payment, requirements)
    expect(error).toMatchObject({ statusCode: 409, errorReason: "nonce_already_consumed", payer: buyer.publicKey() })
    expect(raw.body).toMatchObject({ error: "NONCE_ALREADY_CONSUMED" })
  })

  test("a payer's sponsored-fee budget spent: 429 fee_budget_exhausted, retryAfterSeconds kept", async () => {
    const buyer = seededBuyer(78)
    const pay = async () =>
      buildExactPayment(requirements, { buyer, validUntilLedger: stack.ledger.latestLedger() + 50 })
    expect(await client.settle(await pay(), requirements)).toMatchObject({ success: true, payer: buyer.publicKey() })
    const { error, raw } = await settleRefused(await pay(), requirements)
    expect(error).toMatchObject({ statusCode: 429, errorReason: "fee_budget_exhausted", payer: buyer.publicKey() })
    const { retryAfterSeconds } = raw.body as { retryAfterSeconds: number }
    expect(raw.body).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED", extensions: { sextant: { retryAfterSeconds } } })
    expect(raw.headers.get("retry-after")).toBe(String(retryAfterSeconds))
  })
})

describe("verify runs settle's own checks before any backend", () => {
  const verifyCalls = () => stack.backend.calls("/verify")

  test("a wrong amount and a bogus signature: isValid false with the reason, and the permissive backend is never asked", async () => {
    const before = verifyCalls()
    const underpaid = await buildExactPayment(requirements, { buyer: seededBuyer(81), transfer: { amount: "9999" } })
    expect(await verifyRefused(underpaid, requirements)).toMatchObject({
      statusCode: 400,
      invalidReason: "invalid_exact_stellar_payload_wrong_amount",
      payer: seededBuyer(81).publicKey()
    })
    const forged = await buildExactPayment(requirements, { buyer: seededBuyer(82), bogusSignature: true })
    expect(await verifyRefused(forged, requirements)).toMatchObject({
      statusCode: 400,
      invalidReason: "invalid_exact_stellar_payload_missing_payer_signature"
    })
    // Raw: the body on the wire carries both the x402 fields and the service's error.
    const raw = await request(`${stack.server.url}/x402/verify`, {
      method: "POST",
      json: settleBody(forged, requirements)
    })
    expect(raw.body).toMatchObject({ isValid: false, error: "INVALID_PAYER_SIGNATURE", message: expect.any(String) })
    expect(verifyCalls()).toBe(before)
    // The same backend calls a sound payment valid: it checks nothing of the above.
    expect(
      await client.verify(await buildExactPayment(requirements, { buyer: seededBuyer(83) }), requirements)
    ).toMatchObject({ isValid: true })
    expect(verifyCalls()).toBe(before + 1)
  })

  test("an unverified payee and a spent nonce are refused at verify as at settle", async () => {
    const before = verifyCalls()
    const unlisted = exactRequirements({ payTo: UNLISTED_PAYEE })
    expect(await verifyRefused(await buildExactPayment(unlisted, { buyer: seededBuyer(84) }), unlisted)).toMatchObject({
      statusCode: 403,
      invalidReason: "policy_denied"
    })
    const buyer = seededBuyer(85)
    const payment = await buildExactPayment(requirements, { buyer, validUntilLedger: stack.ledger.latestLedger() + 50 })
    const op = new Transaction(payment.payload.transaction, networkPassphrase("stellar:testnet")).operations[0]
    if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
    stack.ledger.submit({ func: op.func, auth: op.auth ?? [] }, {})
    expect(await verifyRefused(payment, requirements)).toMatchObject({
      statusCode: 409,
      invalidReason: "nonce_already_consumed"
    })
    expect(verifyCalls()).toBe(before)
  })
})
