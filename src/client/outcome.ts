import type { AttemptOutcome } from "../domain/buy.js"
import type { PaidAnswer, PayForError } from "../payments/payFor.js"

/** What the paid answer means for the purchase. */
export type PaidVerdict =
  /** A 2xx with its body: the purchase is done. */
  | { readonly _tag: "Delivered"; readonly transactionHash: string | null }
  /** Nothing settled by the resource's own account: the next provider may be tried. */
  | { readonly _tag: "Unpaid"; readonly reason: string }
  /** Settled, but no usable answer: stop, since another provider would be a second payment. */
  | { readonly _tag: "PaidFailed"; readonly reason: string }

const TRANSACTION_HASH = /^[0-9a-f]{64}$/

/**
 * Judges the answer to the paid request, as x402's HTTP transport defines it: a resource sends
 * `PAYMENT-RESPONSE` when it settled (success true with the transaction) or tried to (success
 * false); the stock middleware does not settle when the handler fails, so a non-2xx without a
 * successful `PAYMENT-RESPONSE` paid nothing. A 2xx with its body is delivered whatever the header
 * says (without one, the payment is reported with no transaction): stopping there is what keeps a
 * second provider from being paid for data already received.
 */
export const judgePaid = (
  answer: Pick<PaidAnswer, "status" | "paymentResponse" | "body" | "toolError">
): PaidVerdict => {
  const settled = answer.paymentResponse?.success === true
  const ok = answer.status >= 200 && answer.status < 300 && answer.toolError !== true
  if (ok && answer.body !== null) {
    const transaction = settled ? (answer.paymentResponse?.transaction ?? "") : ""
    return { _tag: "Delivered", transactionHash: TRANSACTION_HASH.test(transaction) ? transaction : null }
  }
  const why = ok
    ? "the answer was larger than buyer.maxBodyBytes"
    : answer.toolError === true
      ? "the paid tool call answered an error"
      : `the paid request answered ${answer.status}`
  if (settled)
    return {
      _tag: "PaidFailed",
      reason: `${why} after the payment settled (transaction ${answer.paymentResponse?.transaction})`
    }
  const refused = answer.paymentResponse?.errorReason
  return { _tag: "Unpaid", reason: `${why} without settling${refused === undefined ? "" : ` (${refused})`}` }
}

/** An attempt that ended before an answer to the paid request: what it was, and why. */
export const judgeFailure = (error: PayForError): { readonly outcome: AttemptOutcome; readonly reason: string } => {
  switch (error._tag) {
    case "PaymentOutcomeUnknown":
      return {
        outcome: "unknown",
        reason: `the signed payment was sent and no answer came (${error.reason}); it may settle until ledger ${error.authorization.expirationLedger} (nonce ${error.authorization.nonce})${
          error.paymentIdentifier === undefined
            ? "; not resent: the seller offers no payment identifier, so a resend could pay twice"
            : ""
        }`
      }
    case "NoAcceptableOption":
      return { outcome: "refused", reason: `the 402 offers nothing the route allows: ${error.offered}` }
    case "PriceAboveLimit":
      return {
        outcome: "refused",
        reason: `the 402 asks ${error.cheapest} base units, more than the routed ceiling ${error.maxPrice}`
      }
    case "NoPaymentRequired":
      return {
        outcome: "failed",
        reason: `the unpaid request answered ${error.toolAnswer ?? error.httpStatus}, not ${error.toolAnswer === undefined ? "402" : "a PaymentRequired"}`
      }
    default:
      return { outcome: "failed", reason: `${error._tag}: ${error.reason}` }
  }
}
