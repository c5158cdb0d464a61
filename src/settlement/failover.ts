import { Clock, Duration, Effect, Either } from "effect"
import type { FacilitatorsNotReady, UnsupportedPaymentKind } from "../domain/errors.js"
import { SETTLEMENT_PENDING } from "../domain/settlements.js"
import type { SettleResponse } from "../domain/x402.js"
import type { BackendFailure } from "../x402/FacilitatorClient.js"
import type { FacilitatorPoolShape } from "../x402/FacilitatorPool.js"

/**
 * Result of forwarding one settle. Not an error channel: the settlement journal records each case
 * differently.
 * - Answered: a backend gave a settle result (success or a refusal); it is the answer.
 * - Executed: a backend gave no usable answer, but the ledger shows the payment executed, in
 *   `transaction`; that is the answer.
 * - Indeterminate: a backend may have acted, gave no usable answer, and the ledger could not tell
 *   (unreadable, no time left, or no further backend to try).
 * - Failed: no eligible backend could be reached (or none was healthy), so none received the payment.
 * - Unsupported: no backend advertises the network and scheme (or none has said yet: not ready).
 * `failures` lists every backend error met on the way, in order.
 */
export type SettleOutcome =
  | {
      readonly _tag: "Answered"
      readonly backendId: string
      readonly response: typeof SettleResponse.Type
      readonly failures: ReadonlyArray<BackendFailure>
    }
  | {
      readonly _tag: "Executed"
      readonly backendId: string
      readonly transaction: string
      readonly reason: string
      readonly failures: ReadonlyArray<BackendFailure>
    }
  | {
      readonly _tag: "Indeterminate"
      readonly backendId: string
      readonly reason: string
      readonly failures: ReadonlyArray<BackendFailure>
    }
  | { readonly _tag: "Failed"; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Unsupported"; readonly error: UnsupportedPaymentKind | FacilitatorsNotReady }

/** What the ledger says about a payment after a backend left its fate unknown. */
export type LedgerVerdict =
  | { readonly _tag: "Executed"; readonly transaction: string; readonly reason: string }
  | { readonly _tag: "NotExecuted"; readonly reason: string }
  | { readonly _tag: "Unknown"; readonly reason: string }

/**
 * How a settle may go on after a backend gave no usable answer (docs/decisions.md, settle
 * failover). The payer's authorisation carries a single-use nonce, so at most one submission of
 * the signed payload can execute: asking the ledger first, and sending the same payload to the
 * next backend only while the nonce is unconsumed, can never pay twice.
 */
export interface SettleGuard {
  /** Epoch ms by which the settle is answered, whatever the backends do. */
  readonly deadlineMs: number
  /** Kept back from each backend call for the ledger reads that may follow it. */
  readonly ledgerReserveMs: number
  /** Reads the ledger, within `withinMs`. */
  readonly verdict: (withinMs: number) => Effect.Effect<LedgerVerdict>
  /**
   * Runs before the payload goes to a further backend: the journal judges the attempt's fee
   * against the budgets, then records and charges it. Null when it did; else why the attempt is
   * not made (a budget it would exceed, or a journal that could not record it).
   */
  readonly beforeRetry: (backendId: string, reason: string) => Effect.Effect<string | null>
}

/**
 * Whether a settle may move on to the next backend after `failure`.
 *
 * A settle submits a transaction; asking a second backend after the first may have submitted it
 * risks answering "failed" for a payment that went through (the second fails on the used nonce)
 * and paying its fee twice. (The buyer cannot be charged twice: the Soroban auth entry carries a
 * nonce, so the signed transfer executes at most once on the ledger.) So the pool falls through
 * without more ado only when the request provably never arrived: the backend could not be reached
 * at all (connection refused, name not resolved). Any answer with an error status may come after
 * the payment was submitted, 5xx included (a 502 or 504 from a gateway may come after the
 * facilitator behind it submitted); so may a timeout, a connection broken mid-answer and a body
 * that is not a settle result. After those the pool asks the ledger (`SettleGuard`) before it goes
 * on, and stops as indeterminate when the ledger cannot tell.
 */
export const settleMayFallThrough = (failure: BackendFailure): boolean => failure.kind === "Unreachable"

/** One send of the settle body to the named backend, within `timeout`: its answer or why it gave none. */
export type SendSettle = (
  backendId: string,
  timeout: Duration.DurationInput
) => Effect.Effect<Either.Either<typeof SettleResponse.Type, BackendFailure>>

/**
 * One settle sent to the backends eligible for its kind (`FacilitatorPool.settleTargets`: the
 * healthy ones that advertise it, in config order) until one answers, the ledger shows the payment
 * executed, or the guard stops it (`settleMayFallThrough`, `SettleGuard`). `send` is the pool's
 * `settleVia`, which bounds each call by its settle timeout and counts it in the backend's health.
 */
export const settleWithFailover = (
  backendIds: ReadonlyArray<string>,
  send: SendSettle,
  guard: SettleGuard
): Effect.Effect<SettleOutcome> =>
  Effect.gen(function* () {
    const failures: Array<BackendFailure> = []
    const remaining = Effect.map(Clock.currentTimeMillis, (now) => guard.deadlineMs - now)
    /** The backend that last left the payment's fate unknown, and why the ledger could not settle the question. */
    let unresolved: { readonly backendId: string; readonly reason: string } | null = null
    const indeterminate = (reason: string) =>
      ({ _tag: "Indeterminate", backendId: unresolved?.backendId ?? "", reason, failures }) satisfies SettleOutcome
    for (const [index, backendId] of backendIds.entries()) {
      // An even share of the time left for this backend and each one after it, each keeping back
      // the ledger read that may follow it: one silent backend cannot use up the whole deadline.
      const sharing = backendIds.length - index
      const budget = ((yield* remaining) - guard.ledgerReserveMs * sharing) / sharing
      if (budget <= 0) {
        if (unresolved !== null)
          return indeterminate(`${unresolved.reason}, and no time was left before the settle deadline to try another`)
        break
      }
      const withheld = unresolved === null ? null : yield* guard.beforeRetry(backendId, unresolved.reason)
      if (unresolved !== null && withheld !== null)
        return indeterminate(`${unresolved.reason}, and no further facilitator was tried: ${withheld}`)
      const result = yield* send(backendId, Duration.millis(budget))
      if (result._tag === "Right") {
        // A refusal after an earlier backend went silent may be this one losing the race to it
        // (failing on the nonce the earlier submission spent). It is answered only when the
        // ledger shows the earlier submission executed (a success); otherwise the earlier one may
        // still land, so the outcome is left to the reconciler, never journaled `failed`.
        if (unresolved !== null && !result.right.success && result.right.errorReason !== SETTLEMENT_PENDING) {
          const verdict = yield* guard.verdict(Math.max(0, yield* remaining))
          if (verdict._tag === "Executed")
            return { ...verdict, backendId: unresolved.backendId, failures } satisfies SettleOutcome
          return indeterminate(
            `facilitator "${backendId}" refused it (${result.right.errorReason ?? result.right.errorMessage ?? "success: false"}) ` +
              `after ${unresolved.reason}, and the ledger cannot yet confirm or rule out that earlier submission: ${verdict.reason}`
          )
        }
        return {
          _tag: "Answered",
          backendId: backendId,
          response: result.right,
          failures
        } satisfies SettleOutcome
      }
      failures.push(result.left)
      if (settleMayFallThrough(result.left)) continue
      const verdict = yield* guard.verdict(Math.max(0, yield* remaining))
      if (verdict._tag === "Executed") return { ...verdict, backendId: backendId, failures } satisfies SettleOutcome
      if (verdict._tag === "Unknown") {
        unresolved = { backendId: backendId, reason: verdict.reason }
        return indeterminate(verdict.reason)
      }
      unresolved = {
        backendId: backendId,
        reason: `facilitator "${backendId}" gave no usable answer (${result.left.detail}) and ${verdict.reason}`
      }
    }
    return unresolved !== null
      ? indeterminate(`${unresolved.reason}; no other eligible facilitator was left to try`)
      : ({ _tag: "Failed", failures } satisfies SettleOutcome)
  })

/**
 * A settle body through the pool: `Unsupported` when no backend can take its kind, else
 * `settleWithFailover` over the pool's targets, each send through `settleVia`.
 */
export const settleThroughPool = (
  pool: FacilitatorPoolShape,
  body: unknown,
  kind: { readonly network: string; readonly scheme: string },
  guard: SettleGuard
): Effect.Effect<SettleOutcome> =>
  Effect.flatMap(
    pool.settleTargets(kind.network, kind.scheme),
    Either.match({
      onLeft: (error) => Effect.succeed<SettleOutcome>({ _tag: "Unsupported", error }),
      onRight: (backendIds) =>
        settleWithFailover(backendIds, (backendId, timeout) => pool.settleVia(backendId, body, timeout), guard)
    })
  )
