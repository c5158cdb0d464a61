import { describe, expect, test } from "bun:test"
import { settleRefusalProvesNothingMoved, unknownOutcomeOf } from "../src/payments/paidOutcome.js"

const reply = (
  status: number,
  paymentResponse: { success: boolean; errorReason?: string } | null = null,
  challenged = false
) => ({ status, paymentResponse, challenged })

describe("what a paid answer says about the money", () => {
  test("settled or delivered tells, on a first send and on a resend alike", () => {
    expect(unknownOutcomeOf(reply(200, { success: true }))).toBeNull()
    expect(unknownOutcomeOf(reply(200))).toBeNull()
    expect(unknownOutcomeOf(reply(402, { success: true }), true)).toBeNull()
    expect(unknownOutcomeOf(reply(200), true)).toBeNull()
  })

  test("a stock seller's 402 after a settle that failed for an unknown reason is unknown, not a refusal", () => {
    for (const reason of [
      "unexpected_settle_error",
      "settlement_pending",
      "fetch failed",
      "Facilitator settle failed (500): <html>",
      "settle_exact_stellar_transaction_submission_failed"
    ]) {
      expect(unknownOutcomeOf(reply(402, { success: false, errorReason: reason }))).toContain(reason)
    }
    expect(unknownOutcomeOf(reply(402, { success: false }))).toContain("no reason")
  })

  test("a settle refusal that proves nothing moved, a verify refusal and the resource's own failure tell", () => {
    expect(
      unknownOutcomeOf(reply(402, { success: false, errorReason: "invalid_exact_stellar_payload_wrong_amount" }))
    ).toBeNull()
    expect(
      unknownOutcomeOf(reply(402, { success: false, errorReason: "settle_exact_stellar_transaction_failed" }))
    ).toBeNull()
    expect(unknownOutcomeOf(reply(402, null, true))).toBeNull()
    expect(unknownOutcomeOf(reply(500))).toBeNull()
    expect(unknownOutcomeOf(reply(404))).toBeNull()
  })

  test("a gateway's 5xx or a bare 402 without a settle answer is unknown", () => {
    for (const status of [502, 503, 504]) expect(unknownOutcomeOf(reply(status))).toContain(String(status))
    expect(unknownOutcomeOf(reply(402))).toContain("neither")
  })

  test("after an unknown send, a resend's refusal is unknown too: the ledger may refuse the nonce the first send spent", () => {
    expect(unknownOutcomeOf(reply(402, { success: false, errorReason: "transaction_failed" }), true)).toContain(
      "earlier send"
    )
    expect(unknownOutcomeOf(reply(402, null, true), true)).toContain("earlier send")
  })

  test("refusal vocabulary", () => {
    expect(settleRefusalProvesNothingMoved("invalid_network")).toBe(true)
    expect(settleRefusalProvesNothingMoved("insufficient_funds")).toBe(true)
    expect(settleRefusalProvesNothingMoved("unexpected_settle_error")).toBe(false)
    expect(settleRefusalProvesNothingMoved(undefined)).toBe(false)
  })
})
