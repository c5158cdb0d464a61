import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { budgetLimitsOf } from "../domain/budgets.js"
import type { SettlementId } from "../domain/ids.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { carriesAuthorization, findExecution } from "./execution.js"
import type { LedgerVerdict, SettleGuard } from "./failover.js"
import { ledgerReserveMsOf } from "./nonceCheck.js"
import { authorizedPayment, type Payment } from "./readPayment.js"

/**
 * Step 10: Forward with failover: the ledger reads and the journal's fee judgement that make
 * settle failover safe (docs/decisions.md, settle failover), the `SettleGuard` of
 * `settleWithFailover`, and the ledger check of a pending answer's transaction.
 */
export interface LedgerGuardShape {
  /** The guard of one reserved settlement, started at `startedMs`: its deadline, ledger reads and further-attempt fees. */
  readonly guard: (id: SettlementId, payment: Payment, startedMs: number) => SettleGuard
  /**
   * What the ledger says about the payment after a backend went silent. Consumed nonce: executed,
   * once the transfer in a transaction carrying this authorisation is found (else unknown).
   * Unconsumed while the authorisation is still valid: not executed, so the same payload may go
   * to the next backend. Anything else, or a ledger that cannot be read in time: unknown.
   */
  readonly verdict: (payment: Payment, withinMs: number) => Effect.Effect<LedgerVerdict>
  /** Whether `transaction` is on the ledger, successful and carrying this payment's authorisation; false when unreadable in time. */
  readonly confirms: (transaction: string, payment: Payment) => Effect.Effect<boolean>
}

export class LedgerGuard extends Context.Tag("sextant/LedgerGuard")<LedgerGuard, LedgerGuardShape>() {
  static readonly Live = Layer.effect(
    LedgerGuard,
    Effect.suspend(() => make)
  )
}

const unknown = (reason: string): LedgerVerdict => ({ _tag: "Unknown", reason })

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const ledger = yield* LedgerReader
  const journal = yield* SettlementJournal
  const ledgerReserveMs = ledgerReserveMsOf(config)
  const budgets = budgetLimitsOf(config)

  const verdict = (payment: Payment, withinMs: number): Effect.Effect<LedgerVerdict> => {
    const signed = authorizedPayment(payment)
    if (signed === null)
      return Effect.succeed(unknown("the payment carries no payer authorisation to look for on the ledger"))
    return Effect.gen(function* () {
      const latest = yield* ledger.latestLedger()
      if (yield* ledger.nonceConsumed(signed.payer, BigInt(signed.nonce))) {
        const execution = yield* findExecution(ledger, signed, latest)
        return Option.match(execution, {
          onNone: () =>
            unknown(`the payer's nonce ${signed.nonce} is consumed but no transfer carrying it is on the ledger yet`),
          onSome: (event): LedgerVerdict => ({
            _tag: "Executed",
            transaction: event.transactionHash,
            reason:
              `the ledger shows the payment executed in transaction ${event.transactionHash} (ledger ${event.ledger}): ` +
              `its transfer, carrying the payer's nonce ${signed.nonce}`
          })
        })
      }
      if (latest >= signed.expirationLedger) {
        return unknown(`the payer's authorisation expired at ledger ${signed.expirationLedger} (latest ${latest})`)
      }
      return {
        _tag: "NotExecuted",
        reason: `the payer's nonce ${signed.nonce} is unconsumed at ledger ${latest}, valid until ${signed.expirationLedger}`
      } satisfies LedgerVerdict
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(withinMs),
        onTimeout: () => unknown(`the ledger did not answer within ${withinMs} ms`)
      }),
      Effect.catchAll((e) => Effect.succeed("reason" in e ? e : unknown(`the ledger could not be read (${e.message})`)))
    )
  }

  /** A further attempt costs one more fee ceiling: it is judged against the fee budgets like a reservation (no new spend). */
  const beforeRetry = (id: SettlementId) => (backendId: string, reason: string) =>
    Effect.flatMap(Clock.currentTimeMillis, (at) =>
      journal.attempt(id, { reason: `forwarded again, to facilitator "${backendId}": ${reason}`, nowMs: at }, budgets)
    ).pipe(
      Effect.map((attempt) =>
        attempt._tag === "Charged"
          ? null
          : attempt._tag === "Refused"
            ? `a further attempt's fee is refused: ${attempt.error.message}`
            : "the settlement is no longer pending"
      ),
      Effect.catchAllCause((cause) =>
        Effect.as(
          Effect.logError(`settlement ${id}: its further attempt could not be journaled`, cause),
          "the further attempt could not be journaled"
        )
      )
    )

  const confirms = (transaction: string, payment: Payment) => {
    const signed = authorizedPayment(payment)
    if (signed === null) return Effect.succeed(false)
    return ledger.transaction(transaction).pipe(
      Effect.timeout(Duration.millis(ledgerReserveMs)),
      Effect.map(Option.exists((tx) => tx.successful && carriesAuthorization(tx, signed))),
      Effect.orElseSucceed(() => false)
    )
  }

  return {
    guard: (id, payment, startedMs) => ({
      deadlineMs: startedMs + config.settleDeadlineSeconds * 1000,
      ledgerReserveMs,
      verdict: (withinMs) => verdict(payment, Math.min(withinMs, ledgerReserveMs)),
      beforeRetry: beforeRetry(id)
    }),
    verdict,
    confirms
  } satisfies LedgerGuardShape
})
