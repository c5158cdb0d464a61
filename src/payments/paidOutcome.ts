/**
 * What a seller's answer to a paid request says about the money, read the way a buyer must read it
 * to never pay twice: only an answer that proves nothing moved lets the buyer try another seller.
 *
 * A stock x402 seller (`@x402/core`'s HTTP resource server, hence `@x402/hono`, `/express`, `/next`)
 * answers a failed settle with 402 and a `PAYMENT-RESPONSE` whose `errorReason` is the facilitator's
 * reason, or, when the facilitator could not be read at all (a dropped connection, a gateway's
 * error page), the error's own message; and 502 when its reply was unreadable. Either may follow a
 * transfer that went through. A verify refusal comes back as a fresh challenge (`PAYMENT-REQUIRED`)
 * without a `PAYMENT-RESPONSE`: verify precedes settle, so nothing was submitted. The stock flow
 * settles after the handler and never when it fails, so the resource's own 500 settled nothing; a
 * 502, 503 or 504 may be a gateway that gave up, or the middleware's unreadable facilitator reply.
 * A paid MCP answer is read into the same shape (`mcpPaidReply`), so one rule judges both transports.
 */
export interface PaidReply {
  readonly status: number
  /** The decoded `PAYMENT-RESPONSE`, when the seller sent one. */
  readonly paymentResponse: { readonly success: boolean; readonly errorReason?: string | undefined } | null
  /** The seller sent a new challenge (`PAYMENT-REQUIRED`) with the answer. */
  readonly challenged: boolean
}

/**
 * Settle refusals that prove the payment did not move: the payload or requirements were refused
 * (every x402 `invalid_*` code), the scheme or network is not served, or the transaction failed on
 * the ledger (a failed transaction moves nothing; its nonce may be spent, so the payment cannot
 * move later either). Anything else (`unexpected_settle_error`, `settlement_pending`, a submission
 * whose fate is unknown, free text) leaves the outcome unknown.
 */
const GATEWAY_STATUSES = new Set([502, 503, 504])

const NOTHING_MOVED = new Set([
  "unsupported_scheme",
  "network_mismatch",
  "insufficient_funds",
  "transaction_failed",
  "settle_exact_stellar_transaction_failed",
  "settle_exact_stellar_signer_selection_failed"
])

export const settleRefusalProvesNothingMoved = (reason: string | undefined): boolean =>
  reason !== undefined && (reason.startsWith("invalid_") || NOTHING_MOVED.has(reason))

/**
 * Why the paid answer leaves the payment's outcome unknown, or null when it tells: settled, a 2xx
 * (delivered), a settle refusal that proves nothing moved, a verify refusal (a new challenge and no
 * settle answer), or another status the stock flow answers without settling (the handler failed).
 * On a resend (`resent`) only settled or delivered tells: a refusal then may be the ledger refusing
 * the nonce the earlier send already spent.
 */
export const unknownOutcomeOf = (reply: PaidReply, resent = false): string | null => {
  const settle = reply.paymentResponse
  if (settle?.success === true) return null
  if (reply.status >= 200 && reply.status < 300) return null
  if (resent)
    return `a resend was answered ${reply.status}${settle?.errorReason === undefined ? "" : ` (${settle.errorReason})`} after an earlier send's outcome was unknown: that one may have settled`
  if (settle !== null) {
    return settleRefusalProvesNothingMoved(settle.errorReason)
      ? null
      : `the seller answered ${reply.status} with a failed settle (${settle.errorReason ?? "no reason"}) that does not say the payment did not move`
  }
  if (GATEWAY_STATUSES.has(reply.status)) return `the seller answered ${reply.status} without a settle answer`
  if (reply.status === 402 && !reply.challenged)
    return "the seller answered 402 with neither a settle answer nor a new challenge"
  return null
}
