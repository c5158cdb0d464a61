import { Either } from "effect"
import { statusOfError } from "../domain/apiError.js"
import {
  AllFacilitatorsFailed,
  type AuthorizationExpiresTooLate,
  type FacilitatorsNotReady,
  NoHealthyFacilitator,
  type NonceAlreadyConsumed,
  SettlementIndeterminate,
  type UnsupportedPaymentKind
} from "../domain/errors.js"
import type { EconomicEvent } from "../domain/evidence.js"
import type { ResourceId, SettlementId } from "../domain/ids.js"
import { type Completion, isPendingAnswer, SETTLEMENT_PENDING } from "../domain/settlements.js"
import type { SettleRequest, SettleResponse } from "../domain/x402.js"
import type { SettleOutcome } from "./failover.js"
import type { Payment } from "./readPayment.js"

export type SettleAnswer = typeof SettleResponse.Type

/** What a forwarding can refuse with, once the payment is reserved. */
export type ForwardRefusal =
  | UnsupportedPaymentKind
  | FacilitatorsNotReady
  | NoHealthyFacilitator
  | AllFacilitatorsFailed
  | SettlementIndeterminate

/** The resource a settle's evidence is about (null: the payee's, by `EconomicEventsRepo`'s rule) and why it is none, if so. */
export interface EvidenceSubject {
  readonly resourceId: ResourceId | null
  readonly notEvidence: string | null
}

/**
 * This service's own fields are taken out of paymentRequirements before forwarding, so a backend
 * receives the stock body; the payment payload itself goes as signed.
 */
export const stockBody = (body: SettleRequest) => {
  const { amountUsd: _amountUsd, servicePolicy: _servicePolicy, ...requirements } = body.paymentRequirements
  return { ...body, paymentRequirements: requirements }
}

const errorsOf = (outcome: SettleOutcome) =>
  "failures" in outcome ? outcome.failures.map((f) => ({ backendId: f.backendId, error: f.detail })) : []

/** A refusal's completion: no transaction, no payer, the refusal as the stored answer. */
const refusedCompletion = (
  state: Completion["state"],
  error: { readonly error: string; readonly message: string },
  status: number,
  backendId: string | null,
  submitted: boolean,
  errors: Completion["errors"]
): Completion => ({
  state,
  reason: error.message,
  submitted,
  backendId,
  transaction: null,
  payer: null,
  errors,
  answer: { status, body: { error: error.error, message: error.message } }
})

/** Step 9: Spent nonce: the completion of a reservation released before forwarding; nothing was sent, so nothing is charged. */
export const refusedBeforeForwarding = (error: NonceAlreadyConsumed | AuthorizationExpiresTooLate): Completion =>
  refusedCompletion("failed", error, statusOfError(error), null, false, [])

/** A backend's settle result as the journal's completion: `pending` on its `settlement_pending` answer. */
const answered = (response: SettleAnswer, backendId: string, errors: Completion["errors"]): Completion => {
  if (isPendingAnswer(response)) {
    return {
      state: "pending",
      reason:
        `facilitator "${backendId}" broadcast it in transaction ${response.transaction} and has not seen it confirmed ` +
        `(${SETTLEMENT_PENDING}): a retry of the payment or the reconciler resolves it`,
      submitted: true,
      backendId,
      transaction: response.transaction,
      payer: response.payer ?? null,
      errors,
      answer: { status: 200, body: response }
    }
  }
  const refusal = response.success
    ? []
    : [{ backendId, error: response.errorReason ?? response.errorMessage ?? "settle refused" }]
  return {
    state: response.success ? "settled" : "failed",
    reason: response.success
      ? `facilitator "${backendId}" settled it${response.transaction === "" ? "" : ` in transaction ${response.transaction}`}`
      : `facilitator "${backendId}" answered success: false (${refusal[0]?.error})`,
    // A refusal naming no transaction shows the backend submitted nothing, so it cost no fee and
    // its reservation is released: payments that could never settle must not spend the budget.
    submitted: response.success || response.transaction !== "",
    backendId,
    transaction: response.transaction === "" ? null : response.transaction,
    payer: response.payer ?? null,
    errors: [...errors, ...refusal],
    answer: { status: 200, body: response }
  }
}

/** Step 11: Outcome: how a forwarding outcome is journaled and answered; `network` and `payer` fill a success the ledger proved. */
export const conclude = (
  id: SettlementId,
  outcome: SettleOutcome,
  network: string,
  payer: string
): { completion: Completion; answer: Either.Either<SettleAnswer, ForwardRefusal> } => {
  const errors = errorsOf(outcome)
  const refused = (
    state: Completion["state"],
    error: ForwardRefusal,
    status: number,
    backendId: string | null,
    submitted: boolean
  ) => ({
    completion: refusedCompletion(state, error, status, backendId, submitted, errors),
    answer: Either.left(error)
  })
  switch (outcome._tag) {
    case "Answered":
      return {
        completion: answered(outcome.response, outcome.backendId, errors),
        answer: Either.right(outcome.response)
      }
    case "Executed": {
      const response = { success: true, transaction: outcome.transaction, network, payer }
      return {
        completion: {
          state: "settled",
          reason: outcome.reason,
          submitted: true,
          backendId: outcome.backendId,
          transaction: outcome.transaction,
          payer,
          errors,
          answer: { status: 200, body: response }
        },
        answer: Either.right(response)
      }
    }
    case "Indeterminate":
      return refused(
        "indeterminate",
        new SettlementIndeterminate({
          message:
            `facilitator "${outcome.backendId}" gave no usable answer, so the payment may or may not have been ` +
            `submitted: ${outcome.reason}. Settlement ${id} is journaled as indeterminate and resolved from the ledger ` +
            `(GET /x402/settlements/${id})`
        }),
        502,
        outcome.backendId,
        true
      )
    case "Failed":
      return refused(
        "failed",
        errors.length === 0
          ? new NoHealthyFacilitator({ message: "no facilitator supporting this payment is currently healthy" })
          : new AllFacilitatorsFailed({
              message: `every eligible facilitator failed: ${errors.map((e) => `${e.backendId}: ${e.error}`).join("; ")}`
            }),
        502,
        null,
        false
      )
    case "Unsupported":
      return refused("failed", outcome.error, statusOfError(outcome.error), null, false)
  }
}

/**
 * A facilitator's answer as economic evidence of the payee's listed resources: a success waits
 * for the ledger to confirm the transaction moves exactly the signed transfer; a `success: false`
 * counts against them. Stored in the transaction of the journal's outcome (one commit for both).
 */
export const evidenceOf = (
  completion: Completion,
  payment: Payment,
  atMs: number,
  subject: EvidenceSubject
): EconomicEvent => ({
  source: "settlement",
  resourceId: subject.resourceId,
  ...(subject.notEvidence !== null ? { notEvidence: subject.notEvidence } : {}),
  payTo: payment.terms.payTo,
  success: completion.state === "settled",
  transactionHash: completion.transaction,
  at: new Date(atMs).toISOString(),
  payer: payment.transfer.from,
  expected: { payTo: payment.transfer.to, amount: payment.transfer.amount.toString(), scheme: "exact" }
})
