import { describe, expect, test } from "bun:test"
import { unknownOutcomeOf } from "../src/payments/paidOutcome.js"
import { mcpPaidReply } from "../src/payments/payForTool.js"
import { PAYMENT_RESPONSE_META } from "../src/x402/mcpAnswer.js"

/** A paid MCP answer read by the HTTP rule: what lets a buyer try the next seller, and what does not. */
const settle = (success: boolean, errorReason?: string) => ({
  [PAYMENT_RESPONSE_META]: {
    success,
    transaction: success ? "ab".repeat(32) : "",
    network: "stellar:testnet",
    ...(errorReason === undefined ? {} : { errorReason })
  }
})
const challenge = { x402Version: 2, accepts: [], resource: { url: "http://127.0.0.1/mcp#inspect" } }
const judged = (result: Record<string, unknown>, resent = false) => unknownOutcomeOf(mcpPaidReply(result), resent)

describe("a paid MCP answer read as the HTTP rule reads a paid reply (pure)", () => {
  test("delivered, a settle refusal that proves nothing moved, and the handler's own error tell the outcome", () => {
    expect(judged({ content: [{ type: "text", text: "42" }], _meta: settle(true) })).toBeNull()
    expect(judged({ contents: [{ uri: "rwa://x", text: "{}" }] })).toBeNull()
    expect(
      judged({
        resultType: "payment_required",
        paymentRequired: challenge,
        _meta: settle(false, "invalid_exact_stellar_payload_simulation_failed")
      })
    ).toBeNull()
    expect(
      judged({
        isError: true,
        structuredContent: challenge,
        content: [{ type: "text", text: JSON.stringify(challenge) }],
        _meta: settle(false, "transaction_failed")
      })
    ).toBeNull()
    expect(judged({ isError: true, content: [{ type: "text", text: "ASSET_NOT_FOUND: no such asset" }] })).toBeNull()
  })

  test("a failed settle whose reason does not prove nothing moved, or a settle nobody confirmed, is unknown", () => {
    for (const reason of ["unexpected_settle_error", "settlement_pending", "the facilitator said something else"]) {
      expect(
        judged({ resultType: "payment_required", paymentRequired: challenge, _meta: settle(false, reason) })
      ).toContain(reason)
      expect(
        judged({
          isError: true,
          content: [{ type: "text", text: `settlement failed: ${reason}` }],
          _meta: settle(false, reason)
        })
      ).toContain(reason)
    }
    expect(
      judged({
        isError: true,
        content: [{ type: "text", text: "SETTLEMENT_UNCONFIRMED: the facilitator did not confirm settlement" }]
      })
    ).toContain("502")
  })

  test("on a resend only settled or delivered tells: a refusal may be the ledger refusing the nonce the first send spent", () => {
    expect(
      judged(
        { resultType: "payment_required", paymentRequired: challenge, _meta: settle(false, "transaction_failed") },
        true
      )
    ).toContain("resend")
    expect(judged({ content: [], _meta: settle(true) }, true)).toBeNull()
  })
})
