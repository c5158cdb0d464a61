import { Effect, Schema } from "effect"
import {
  IdempotencyKeyReused,
  PaymentAlreadySubmitted,
  SettlementInProgress,
  SettlementUnresolved
} from "../domain/errors.js"
import type { PrincipalId } from "../domain/ids.js"
import type { FoundEntry, JournalEntry } from "../domain/settlements.js"
import { SettleResponse } from "../domain/x402.js"

/**
 * How a 409 names the settlement it met: by id to its own principal only. Another principal's
 * settlement of the same payment is not named, since its id says nothing the caller may read.
 */
const naming = (entry: JournalEntry, principal: PrincipalId) =>
  entry.principal === principal
    ? { entry: `settlement ${entry.id}`, record: ` (GET /x402/settlements/${entry.id})` }
    : { entry: "the settlement", record: "" }

/** The stored answer of a refusal is never replayed (a refused payment is released and retried); a 200 is. */
export const decodeAnswer = Schema.decodeUnknown(SettleResponse)

/** Step 3: Repeats: a repeat of a journaled request gets the stored answer, or 409 when there is none to give. */
export const replay = ({ entry, byKey }: FoundEntry, requestHash: string, principal: PrincipalId) => {
  const { entry: named, record } = naming(entry, principal)
  if (entry.requestHash !== requestHash) {
    return Effect.fail(
      byKey
        ? new IdempotencyKeyReused({
            message: `the Idempotency-Key was already used for a different request (${named})`
          })
        : new PaymentAlreadySubmitted({
            message: `this signed payment was already submitted with different requirements (${named})`
          })
    )
  }
  if (entry.state === "pending") {
    return Effect.fail(new SettlementInProgress({ message: `${named} of this payment is still in progress` }))
  }
  if (entry.state === "indeterminate") {
    return Effect.fail(
      new SettlementUnresolved({
        message:
          `${named} of this payment was interrupted and its outcome is unknown; it is never ` +
          `re-submitted while it may have been paid. The reconciler is checking the ledger for it: once the ` +
          `ledger shows it paid this answer becomes the settlement, once it proves it unpaid a retry is settled anew${record}`
      })
    )
  }
  return entry.answer?.status === 200
    ? Effect.orDie(decodeAnswer(entry.answer.body))
    : Effect.dieMessage(`settlement ${entry.id} is ${entry.state} without a stored answer to replay`)
}
