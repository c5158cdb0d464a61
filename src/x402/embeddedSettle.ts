import { Deferred, Duration, Effect, Either, Option, type Scope } from "effect"
import type { EmbeddedFacilitator } from "../config.js"
import type { SourcePool } from "../facilitator/channels.js"
import type { SettleCounts } from "../facilitator/health.js"
import type { RpcUnavailable } from "../facilitator/ledgerClient.js"
import { type PaymentRequest, readRequest } from "../facilitator/payment.js"
import { Reason, type Refusal } from "../facilitator/reasons.js"
import type { SubmitContext } from "../facilitator/submit.js"
import type { CheckedPayment } from "../facilitator/verifyRules.js"
import { makeSendPayment, pendingAnswer, refusedSettle, type Sent, type Settle } from "./embeddedSend.js"
import { BackendFailure } from "./FacilitatorClient.js"

/** Kept back from a settle's time limit to answer in it (pending, with the hash) rather than be cut off. */
const ANSWER_MARGIN_MS = 1_000
/** Settles remembered by payer and nonce, so a repeat follows the first transaction instead of sending one. */
const REMEMBERED = 10_000

/** What the embedded backend's settle shares with the rest of it: its ledger context, sources, checks and counters. */
export interface EmbeddedSettleParts {
  readonly entry: EmbeddedFacilitator
  readonly context: SubmitContext
  readonly sources: SourcePool
  /** The checks that need no simulation, against the ledger's current window. */
  readonly check: (request: PaymentRequest) => Effect.Effect<Either.Either<CheckedPayment, Refusal>, RpcUnavailable>
  /** The simulation rules, run with the fee account as source. */
  readonly simulate: (
    request: PaymentRequest,
    payment: CheckedPayment
  ) => Effect.Effect<Either.Either<unknown, Refusal>, RpcUnavailable>
  /** A ledger that could not be read, as the pool's failure: nothing was sent. */
  readonly unreachable: (e: RpcUnavailable) => BackendFailure
  readonly count: (outcome: keyof SettleCounts, ledgerSeconds?: number | null) => Effect.Effect<void>
  /** Reads the fee account's balance, after a settle ends. */
  readonly readBalance: Effect.Effect<void>
  /** Sets the balance and lease gauges of `/metrics`. */
  readonly reportState: Effect.Effect<void>
  /** The backend's scope: a transaction still out is followed in it after its settle answered. */
  readonly scope: Scope.Scope
}

/**
 * A settle of this payment another request owns: its outcome, or at the deadline pending with
 * its hash (a timeout when nothing was sent yet: the pool then asks the ledger).
 */
const awaitSent = (entry: EmbeddedFacilitator, earlier: Sent, payer: string, deadline: number) =>
  Deferred.await(earlier.outcome).pipe(
    Effect.timeoutOption(Math.max(0, deadline - Date.now())),
    Effect.flatMap(
      Option.match({
        onSome: Effect.succeed,
        onNone: () =>
          earlier.hash === ""
            ? Effect.fail(
                new BackendFailure({
                  backendId: entry.id,
                  kind: "TimedOut",
                  status: null,
                  detail: "the same payment was still being settled by another request at the deadline"
                })
              )
            : Effect.succeed(pendingAnswer(entry.network, earlier.hash, payer))
      })
    )
  )

/**
 * Claims the payment for this request, in one step with the lookup (no other fiber runs
 * between), so two settles of one payment never both send: the existing claim, or null.
 */
const claim = (sent: Map<string, Sent>, paymentKey: string, record: Sent) =>
  Effect.sync(() => {
    const earlier = sent.get(paymentKey)
    if (earlier !== undefined) return earlier
    sent.set(paymentKey, record)
    if (sent.size > REMEMBERED) sent.delete(sent.keys().next().value!)
    return null
  })

/**
 * The embedded facilitator's `/settle`: the payment read and checked, claimed by payer and nonce
 * so two settles of one payment never both send, simulated, sent from a leased sequence source and
 * followed until the deadline (then answered pending with its hash, and followed on).
 */
export const makeEmbeddedSettle = (parts: EmbeddedSettleParts) => {
  const { entry, check, simulate, unreachable, count } = parts
  const sent = new Map<string, Sent>()
  const settlePayment = makeSendPayment(parts)

  /** The claimed payment judged, sent and followed; its claim ends with the outcome unless a transaction is still out. */
  const settleClaimed = (
    request: PaymentRequest,
    payment: CheckedPayment,
    paymentKey: string,
    record: Sent,
    deadline: number
  ) =>
    Effect.gen(function* () {
      const simulated = yield* simulate(request, payment).pipe(Effect.mapError(unreachable))
      if (Either.isLeft(simulated))
        return yield* Effect.as(count("refused"), refusedSettle(entry.network, simulated.left, payment.payer))
      return yield* settlePayment(request, payment, record, deadline)
    }).pipe(
      Effect.tapBoth({
        // Nothing sent: the claim ends, and a later settle of the payment may try again.
        onFailure: (failure) =>
          record.hash === ""
            ? Effect.zipRight(
                Effect.sync(() => sent.delete(paymentKey)),
                Deferred.fail(record.outcome, failure)
              )
            : Effect.void,
        onSuccess: (answer) =>
          answer.errorReason === Reason.pending
            ? Effect.void
            : Effect.zipRight(
                Deferred.succeed(record.outcome, answer),
                answer.transaction === "" ? Effect.sync(() => sent.delete(paymentKey)) : Effect.void
              )
      })
    )

  const settle = (body: unknown, timeout: Duration.DurationInput) =>
    Effect.gen(function* () {
      const deadline = Date.now() + Duration.toMillis(timeout) - ANSWER_MARGIN_MS
      const request = readRequest(body, entry.network)
      if (Either.isLeft(request))
        return yield* Effect.as(count("refused"), refusedSettle(entry.network, request.left, undefined))
      const checked = yield* check(request.right).pipe(Effect.mapError(unreachable))
      if (Either.isLeft(checked))
        return yield* Effect.as(count("refused"), refusedSettle(entry.network, checked.left, undefined))
      const paymentKey = `${checked.right.payer}:${checked.right.nonce}`
      const record: Sent = { hash: "", outcome: yield* Deferred.make<Settle, BackendFailure>() }
      const earlier = yield* claim(sent, paymentKey, record)
      if (earlier !== null) return yield* awaitSent(entry, earlier, checked.right.payer, deadline)
      return yield* settleClaimed(request.right, checked.right, paymentKey, record, deadline)
    }).pipe(Effect.withSpan("EmbeddedFacilitator.settle"))

  return settle
}
