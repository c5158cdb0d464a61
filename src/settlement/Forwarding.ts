import { Context, Duration, Effect, Either, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { SettlementId } from "../domain/ids.js"
import { type JournalEntry, SETTLEMENT_PENDING } from "../domain/settlements.js"
import type { SettleRequest } from "../domain/x402.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"
import { settleThroughPool } from "./failover.js"
import { LedgerGuard } from "./LedgerGuard.js"
import { ledgerReserveMsOf } from "./nonceCheck.js"
import { OutcomeRecord } from "./OutcomeRecord.js"
import { type ForwardRefusal, type SettleAnswer, stockBody } from "./outcome.js"
import type { Payment } from "./readPayment.js"
import { decodeAnswer } from "./replay.js"

/** Step 10: Forward with failover, of a reserved settlement, and the resolution of a pending one; each ends in its journal record. */
export interface ForwardingShape {
  /** The stock body to the pool, guarded by the ledger and the budgets, within the settle deadline from `startedMs`. */
  readonly forward: (
    id: SettlementId,
    request: SettleRequest,
    payment: Payment,
    startedMs: number
  ) => Effect.Effect<SettleAnswer, ForwardRefusal>
  /**
   * Step 3: Repeats, of an entry a backend answered `settlement_pending` for: the outcome when its
   * payment is sent again: the ledger's, when the backend's transaction is there, successful and
   * carrying this payment's authorisation; else the same backend's answer to the same payload (it
   * reconciles its own broadcast), never another backend's, which could submit it a second time.
   * A backend that gives no usable answer leaves the entry pending: the stored pending answer is given again.
   */
  readonly resolvePending: (
    entry: JournalEntry,
    request: SettleRequest,
    payment: Payment
  ) => Effect.Effect<SettleAnswer, ForwardRefusal>
}

export class Forwarding extends Context.Tag("sextant/Forwarding")<Forwarding, ForwardingShape>() {
  static readonly Live = Layer.effect(
    Forwarding,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const pool = yield* FacilitatorPool
  const guards = yield* LedgerGuard
  const outcomes = yield* OutcomeRecord
  const ledgerReserveMs = ledgerReserveMsOf(config)
  const deadlineMs = config.settleDeadlineSeconds * 1000

  const forward = (id: SettlementId, request: SettleRequest, payment: Payment, startedMs: number) =>
    outcomes
      .record(
        id,
        payment,
        settleThroughPool(pool, stockBody(request), payment.terms, guards.guard(id, payment, startedMs))
      )
      .pipe(Effect.withSpan("Settlement.forward"))

  const resolvePending = Effect.fn("Settlement.resolvePending")(function* (
    entry: JournalEntry,
    request: SettleRequest,
    payment: Payment
  ) {
    const transaction = entry.transaction ?? ""
    const backendId = entry.backendId ?? ""
    if (yield* guards.confirms(transaction, payment)) {
      return yield* outcomes.record(
        entry.id,
        payment,
        Effect.succeed({
          _tag: "Executed",
          backendId,
          transaction,
          reason:
            `the ledger shows transaction ${transaction}, which facilitator "${backendId}" answered ${SETTLEMENT_PENDING} for, ` +
            `executed with the payer's authorisation`,
          failures: []
        })
      )
    }
    const asked = yield* pool.settleVia(backendId, stockBody(request), Duration.millis(deadlineMs - ledgerReserveMs))
    if (Either.isRight(asked)) {
      return yield* outcomes.record(
        entry.id,
        payment,
        Effect.succeed({ _tag: "Answered", backendId, response: asked.right, failures: [] })
      )
    }
    yield* Effect.logWarning(
      `settlement ${entry.id} stays pending: facilitator "${backendId}" gave no usable answer (${asked.left.detail})`
    )
    return yield* Effect.orDie(decodeAnswer(entry.answer?.body))
  })

  return { forward, resolvePending } satisfies ForwardingShape
})
