import { createHash } from "node:crypto"
import { Effect, Either } from "effect"
import { InvalidRequest } from "../domain/errors.js"
import { type PaymentId, PrincipalId } from "../domain/ids.js"
import type { SettleRequest } from "../domain/x402.js"
import { canonicalize } from "../encoding/canonicalJson.js"
import { decodePayment, type PayerAuthorization, type Transfer } from "../ledger/transfer.js"
import type { AuthorizedPayment } from "./execution.js"
import { paidUrlOf, type SettleTerms } from "./rules.js"
import { termsOf } from "./terms.js"

/** The payment a settle or a verify carries, read from its signed transaction rather than from what the body says. */
export interface Payment {
  readonly terms: SettleTerms
  readonly transfer: Transfer
  readonly authorization: PayerAuthorization | null
  readonly paymentId: PaymentId
  /** Hash of what is asked of the payment: a repeat must ask the same, whatever wrapper it comes in. */
  readonly requestHash: string
  readonly principal: PrincipalId
  /** The resource the payment says it pays for, if it names one: the payee is judged on it. */
  readonly paidUrl: string | undefined
}

/**
 * Open mode's one principal for payers no signature here proved (contract accounts, and entries
 * signed by keys other than the payer's): they share one budget, so a payment "from" someone else
 * never spends that someone's.
 */
const UNVERIFIED_PAYERS = PrincipalId.make("open:unverified-payer")

/** sha256 of the canonical JSON, so key order and whitespace do not make two requests differ. */
export const contentHash = (value: unknown) =>
  Either.mapBoth(canonicalize(value), {
    onLeft: (e) => new InvalidRequest({ message: `the request cannot be hashed: ${e.message}` }),
    onRight: (text) => createHash("sha256").update(text).digest("hex")
  })

/** The payment as the ledger can recognise it; null without an address-credential authorisation of the payer. */
export const authorizedPayment = (payment: Payment): AuthorizedPayment | null =>
  payment.authorization === null
    ? null
    : {
        asset: payment.transfer.asset,
        payer: payment.transfer.from,
        payTo: payment.transfer.to,
        nonce: payment.authorization.nonce,
        expirationLedger: payment.authorization.expirationLedger,
        amountMatches: (amount) => amount === payment.transfer.amount
      }

/** Step 2: Read the payment. */
export const paymentOf = (request: SettleRequest, principal: PrincipalId | null, assetContract: string) =>
  Effect.gen(function* () {
    const terms = yield* termsOf(request, assetContract)
    const { paymentId, transfer, authorization, payerVerified } = yield* decodePayment(
      request.paymentPayload.payload.transaction,
      terms.network
    )
    const requestHash = yield* contentHash({
      x402Version: request.x402Version,
      paymentId,
      paymentRequirements: request.paymentRequirements
    })
    // Open mode keys budgets and idempotency on the payer only when its signature proved it.
    const payer = principal ?? (payerVerified ? PrincipalId.make(transfer.from) : UNVERIFIED_PAYERS)
    return {
      terms,
      transfer,
      authorization,
      paymentId,
      requestHash,
      principal: payer,
      paidUrl: paidUrlOf(request)
    } satisfies Payment
  })
