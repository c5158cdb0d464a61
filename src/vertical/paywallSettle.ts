import { encodePaymentResponseHeader } from "@x402/core/http"
import type { x402ResourceServer } from "@x402/core/server"
import { type PaymentPayload, SettleError, type SettleResponse } from "@x402/core/types"
import { declareOfferReceiptExtension } from "@x402/extensions/offer-receipt"
import { Duration, Effect } from "effect"
import { SettlementFailed, SettlementUnconfirmed } from "./errors.js"
import type { VerifiedPayment } from "./Paywall.js"
import { errorMessage } from "./paywallFacilitator.js"

/**
 * Reasons that say the payment's outcome is not known yet: the x402 `unexpected_settle_error` (what
 * Sextant answers for an indeterminate or in-flight settlement) and 2.27's `settlement_pending`
 * (broadcast, not confirmed; the stock server retries once before it reaches here).
 */
const UNKNOWN_OUTCOME_REASONS = new Set(["unexpected_settle_error", "settlement_pending"])
const outcomeUnknown = (reason: string | undefined) => reason !== undefined && UNKNOWN_OUTCOME_REASONS.has(reason)

/** Receipts name the transaction, so a buyer's receipt can be checked against the ledger. */
const SIGNED_RECEIPTS = declareOfferReceiptExtension({ includeTxHash: true })

/** What upstream's receipt hook reads of the request: the paid resource's URL. */
const receiptContext = (payload: PaymentPayload) => ({ request: { adapter: { getUrl: () => payload.resource?.url } } })

/** The paywall's settle of a verified payment through its live server, within the configured timeout. */
export const settleWith = (live: x402ResourceServer, timeoutMs: number) => {
  const timeout = Duration.millis(timeoutMs)
  const unconfirmed = (detail: string) =>
    new SettlementUnconfirmed({
      message: `the facilitator did not confirm settlement (${detail}); no data was returned`
    })

  const refused = (answer: SettleResponse) =>
    new SettlementFailed({
      message: `settlement failed: ${answer.errorMessage ?? answer.errorReason ?? "refused"}`,
      paymentResponse: encodePaymentResponseHeader(answer)
    })

  /**
   * A facilitator that said no (a SettleError, or `success: false`) is a refusal: nothing moved, and
   * the buyer gets 402 with the reason. An outcome nobody knows (no answer in time, a 5xx, an answer
   * that names no usable body, or a reason saying the outcome is not known) is unconfirmed: the
   * buyer must not read it as unpaid.
   */
  return ({ payload, requirements }: VerifiedPayment) =>
    Effect.tryPromise({
      try: () => live.settlePayment(payload, requirements, SIGNED_RECEIPTS, receiptContext(payload)),
      catch: (e) => e
    }).pipe(
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => new Error(`settle did not answer within ${timeoutMs} ms`)
      }),
      Effect.mapError((e) =>
        e instanceof SettleError && e.statusCode < 500 && !outcomeUnknown(e.errorReason)
          ? refused({
              success: false,
              errorReason: e.errorReason,
              errorMessage: e.errorMessage,
              payer: e.payer,
              transaction: e.transaction,
              network: e.network
            })
          : unconfirmed(
              e instanceof SettleError
                ? `${e.statusCode} ${e.errorReason ?? "no reason"}: ${e.errorMessage ?? ""}`
                : errorMessage(e)
            )
      ),
      Effect.flatMap((result) =>
        result.success
          ? Effect.succeed(encodePaymentResponseHeader(result))
          : Effect.fail(outcomeUnknown(result.errorReason) ? unconfirmed(`${result.errorReason}`) : refused(result))
      )
    )
}
