import { describe, expect, test } from "bun:test"
import { Schema } from "effect"
import { FeeBudgetExhausted, PolicyDenied, TransferAmountMismatch } from "../src/domain/errors.js"
import { settleRefusalSchema, verifyRefusalSchema, x402ReasonOf, x402Refusal } from "../src/domain/x402Refusals.js"

const context = { payer: "GB7KBY55KLRAPSOTWDV2MXAHATTG7SRNRYLFUF2SDCYXJ7CBMDSBHXV2", network: "stellar:testnet" }

describe("x402 refusal bodies (pure)", () => {
  test("a code the spec or the Stellar exact scheme names gets that reason; an unknown outcome is never a plain refusal", () => {
    expect(x402ReasonOf("TRANSFER_AMOUNT_MISMATCH", "settle")).toBe("invalid_exact_stellar_payload_wrong_amount")
    expect(x402ReasonOf("UNSUPPORTED_PAYMENT_KIND", "verify")).toBe("unsupported_scheme")
    expect(x402ReasonOf("SETTLEMENT_INDETERMINATE", "settle")).toBe("unexpected_settle_error")
    expect(x402ReasonOf("SETTLEMENT_IN_PROGRESS", "settle")).toBe("unexpected_settle_error")
    expect(x402ReasonOf("ALL_FACILITATORS_FAILED", "verify")).toBe("unexpected_verify_error")
    expect(x402ReasonOf("FEE_BUDGET_EXHAUSTED", "settle")).toBe("fee_budget_exhausted")
  })

  test("a settle refusal keeps the own body and adds the SettleResponse; it fits its declared schema", () => {
    const error = new PolicyDenied({ message: "too dear", code: "PRICE_EXCEEDS_LIMIT" })
    const body = x402Refusal("settle", error, context)
    expect(body).toEqual({
      error: "POLICY_DENIED",
      message: "too dear",
      code: "PRICE_EXCEEDS_LIMIT",
      success: false,
      errorReason: "policy_denied",
      errorMessage: "too dear",
      payer: context.payer,
      transaction: "",
      network: "stellar:testnet",
      extensions: { sextant: { error: "POLICY_DENIED", message: "too dear", code: "PRICE_EXCEEDS_LIMIT" } }
    })
    expect(Schema.is(settleRefusalSchema(PolicyDenied))(body)).toBe(true)
    // Another code's schema does not take it: each code keeps its own status.
    expect(Schema.is(settleRefusalSchema(TransferAmountMismatch))(body)).toBe(false)
  })

  test("a verify refusal is a VerifyResponse; no payer is claimed when none was proved", () => {
    const body = x402Refusal("verify", new FeeBudgetExhausted({ message: "wait", retryAfterSeconds: 60 }), {
      payer: undefined,
      network: ""
    })
    expect(body).toMatchObject({
      isValid: false,
      invalidReason: "fee_budget_exhausted",
      invalidMessage: "wait",
      retryAfterSeconds: 60
    })
    expect("payer" in body).toBe(false)
    expect("success" in body).toBe(false)
    expect(Schema.is(verifyRefusalSchema(FeeBudgetExhausted))(body)).toBe(true)
    expect(Schema.is(settleRefusalSchema(FeeBudgetExhausted))(body)).toBe(false)
  })
})
