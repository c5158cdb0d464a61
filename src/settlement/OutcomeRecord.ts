import { type Cause, Clock, Context, Effect, Either, Fiber, Layer, Option } from "effect"
import type { AuthorizationExpiresTooLate, NonceAlreadyConsumed } from "../domain/errors.js"
import { evidenceShortfall } from "../domain/evidence.js"
import type { SettlementId } from "../domain/ids.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { StoreTransactions } from "../store/StoreTransactions.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import type { SettleOutcome } from "./failover.js"
import {
  conclude,
  type EvidenceSubject,
  evidenceOf,
  type ForwardRefusal,
  refusedBeforeForwarding,
  type SettleAnswer
} from "./outcome.js"
import type { Payment } from "./readPayment.js"

/** Step 11: Outcome: the journal record of how a reserved settlement ended, with its evidence, in one commit. */
export interface OutcomeRecordShape {
  /**
   * Journals and answers what `decide` comes to (a forwarding, or the resolution of a pending
   * answer), with the evidence. A `pending` completion is no evidence either way: the payee is
   * judged once the payment is confirmed or known unpaid. It runs to the end even if the caller
   * goes away (a daemon fiber the caller only joins): an entry left `pending` would only be
   * resolved, as indeterminate, by the next restart. It is counted as in flight, so a graceful
   * shutdown waits for its outcome to be journaled.
   */
  readonly record: (
    id: SettlementId,
    payment: Payment,
    decide: Effect.Effect<SettleOutcome>
  ) => Effect.Effect<SettleAnswer, ForwardRefusal>
  /** Step 9: Spent nonce: releases a reservation the ledger refuses before anything was forwarded, and fails with the refusal. */
  readonly refuseBeforeForwarding: <E extends NonceAlreadyConsumed | AuthorizationExpiresTooLate>(
    id: SettlementId,
    error: E
  ) => Effect.Effect<never, E>
}

export class OutcomeRecord extends Context.Tag("sextant/OutcomeRecord")<OutcomeRecord, OutcomeRecordShape>() {
  static readonly Live = Layer.effect(
    OutcomeRecord,
    Effect.suspend(() => make)
  )
}

/** The buyer's answer never waits on the evidence failing: it is logged. */
const logEvidenceFailure = (id: SettlementId, payment: Payment) => (cause: Cause.Cause<unknown>) =>
  Effect.as(
    Effect.logError(
      `settlement ${id}: answered, but recording it as evidence for payee ${payment.terms.payTo} failed`,
      cause
    ),
    false
  )

const make = Effect.gen(function* () {
  const journal = yield* SettlementJournal
  const resources = yield* ResourceReadsRepo
  const reader = yield* EvidenceReader
  const recorder = yield* EvidenceRecorder
  const { transaction } = yield* StoreTransactions
  const lifecycle = yield* Lifecycle

  /**
   * What the payment is evidence about: the resource it names (a listed one paying this payee),
   * else the payee's one listed resource; and whether it costs what that resource claims
   * (`evidenceShortfall`): a payment below the price, or naming no resource of a payee with
   * several, is stored as no evidence. A failed read must not keep the facilitator's answer from
   * the journal: the payment is then no evidence about any resource.
   */
  const evidenceSubject = (payment: Payment): Effect.Effect<EvidenceSubject> =>
    Effect.gen(function* () {
      const named =
        payment.paidUrl === undefined ? null : yield* resources.namedPayee(payment.paidUrl, payment.terms.payTo)
      const subject = named ?? (yield* resources.soleListedPayee(payment.terms.payTo))
      const record = subject === null ? Option.none() : yield* resources.get(subject)
      const notEvidence = Option.match(record, {
        onNone: () =>
          `the payment names no listed resource of payee ${payment.terms.payTo}, which has not exactly one: no evidence about any`,
        onSome: (r) =>
          evidenceShortfall(
            { id: r.resource.id, paymentOptions: r.paymentOptions },
            { ...payment.terms, amount: payment.transfer.amount }
          )
      })
      return { resourceId: named, notEvidence }
    }).pipe(
      Effect.catchAllCause(() =>
        Effect.succeed({ resourceId: null, notEvidence: "the resources the payment may be about could not be read" })
      )
    )

  const record = (id: SettlementId, payment: Payment, decide: Effect.Effect<SettleOutcome>) => {
    const run = Effect.gen(function* () {
      // The resource the evidence is about is read while the backend works, off the answer's path.
      const named = yield* Effect.fork(evidenceSubject(payment))
      const outcome = yield* decide
      const { completion, answer } = conclude(id, outcome, payment.terms.network, payment.transfer.from)
      const at = yield* Clock.currentTimeMillis
      const journaled = journal
        .complete(id, completion, at)
        .pipe(
          Effect.catchAllCause((cause) =>
            Effect.logError(
              `settlement ${id}: recording its outcome failed; it will be indeterminate after a restart`,
              cause
            )
          )
        )
      // A facilitator answered (success or not): its evidence is stored with the outcome, and the
      // buyer gets the answer even if the evidence cannot be recorded.
      const evidence =
        Either.isRight(answer) && completion.state !== "pending"
          ? recorder
              .storeEconomic(evidenceOf(completion, payment, at, yield* Fiber.join(named)))
              .pipe(Effect.catchAllCause(logEvidenceFailure(id, payment)))
          : Effect.succeed(false)
      // Committed without a flush (survives a process crash, not a power loss): the buyer need not wait for a second fsync.
      // Lost only with power, it leaves the entry `pending`, which the next start makes
      // `indeterminate` and the reconciler resolves from the ledger; the reservation before the
      // backend call stays fsynced (docs/decisions.md, Durability).
      const counts = yield* commitWithoutFlush(transaction(Effect.zipRight(journaled, evidence)))
      // Re-deriving the payee's resources (only a failure counts at once) runs after the commit,
      // outside the journal's transaction: it takes the recorder's lock, which a probe batch holds.
      if (counts) {
        yield* Effect.flatMap(reader.forPayee(payment.terms.payTo), (payees) =>
          recorder.refreshAbout(payees.map((p) => p.record))
        ).pipe(Effect.catchAllCause(logEvidenceFailure(id, payment)))
      }
      return answer
    })
    return lifecycle.forkTracked(run).pipe(Effect.flatMap(Fiber.join), Effect.flatten)
  }

  const refuseBeforeForwarding = Effect.fn("Settlement.refuseBeforeForwarding")(function* <
    E extends NonceAlreadyConsumed | AuthorizationExpiresTooLate
  >(id: SettlementId, error: E) {
    yield* journal.complete(id, refusedBeforeForwarding(error), yield* Clock.currentTimeMillis)
    return yield* Effect.fail(error)
  })

  return { record, refuseBeforeForwarding } satisfies OutcomeRecordShape
})
