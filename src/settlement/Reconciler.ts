import { Clock, Context, type Duration, Effect, Layer, Option, Ref } from "effect"
import { evidenceShortfall } from "../domain/evidence.js"
import type { SettlementId } from "../domain/ids.js"
import type { JournalEntry } from "../domain/settlements.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { repeatedPass } from "../lifecycle/repeatedPass.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import { findExecution } from "./execution.js"
import { amountMatches, judgeUnresolved } from "./reconcile.js"

/**
 * Entries looked at per pass; the rest wait for the next one. Each pass starts after the last
 * entry the previous one looked at (wrapping to the first after the end), so entries the ledger
 * cannot decide yet never hold the batch: every unresolved entry is visited within
 * ceil(unresolved / BATCH) passes.
 */
export const BATCH = 50

export interface ReconcileReport {
  readonly checked: number
  readonly settled: number
  readonly unpaid: number
}

export interface ReconcilerShape {
  /** One pass: resolves the next batch of unresolved settlements against the ledger (after the previous batch's last). */
  readonly reconcileOnce: Effect.Effect<ReconcileReport>
}

/**
 * Resolves settlements whose outcome is unknown (`indeterminate`, including those crash recovery
 * marked, and `pending` ones a backend answered `settlement_pending` for) against the ledger,
 * never by sending the payment again.
 */
export class Reconciler extends Context.Tag("sextant/Reconciler")<Reconciler, ReconcilerShape>() {
  static readonly Live = Layer.effect(
    Reconciler,
    Effect.suspend(() => make)
  )

  /** Reconciles every `interval` for as long as the scope lives (the serving process). */
  static readonly schedule = (interval: Duration.DurationInput) =>
    Layer.scopedDiscard(
      Effect.flatMap(Reconciler, ({ reconcileOnce }) =>
        repeatedPass(reconcileOnce, interval, "reconciliation pass failed")
      )
    )
}

const make = Effect.gen(function* () {
  const journal = yield* SettlementJournal
  const ledger = yield* LedgerReader
  const reader = yield* EvidenceReader
  const recorder = yield* EvidenceRecorder

  const findings = (entry: JournalEntry & { readonly payer: string }, expirationLedger: number, nonce: string) =>
    Effect.gen(function* () {
      const latestLedger = yield* ledger.latestLedger()
      const nonceConsumed = yield* ledger.nonceConsumed(entry.payer, BigInt(nonce))
      const execution = yield* findExecution(
        ledger,
        {
          asset: entry.asset,
          payer: entry.payer,
          payTo: entry.payTo,
          nonce,
          expirationLedger,
          amountMatches: amountMatches(entry)
        },
        latestLedger
      )
      return { latestLedger, nonceConsumed, transfers: Option.toArray(execution) }
    })

  /**
   * A payment the ledger shows paid is settlement evidence, confirmed like any other, about the
   * payee's one listed resource and only when it costs what that resource claims (the journal
   * keeps no named resource, so with several there is none it is evidence about).
   */
  const recordPaid = (entry: JournalEntry, transaction: string, amount: bigint, atMs: number) =>
    Effect.gen(function* () {
      const payees = yield* reader.forPayee(entry.payTo)
      const [sole, ...others] = payees
      const notEvidence =
        sole === undefined || others.length > 0
          ? `payee ${entry.payTo} has not exactly one listed resource for a payment naming none: no evidence about any`
          : evidenceShortfall(
              { id: sole.record.resource.id, paymentOptions: sole.record.paymentOptions },
              { ...entry, amount }
            )
      yield* recorder.recordEconomic(
        {
          source: "settlement",
          resourceId: null,
          ...(notEvidence !== null ? { notEvidence } : {}),
          payTo: entry.payTo,
          success: true,
          transactionHash: transaction,
          at: new Date(atMs).toISOString(),
          payer: entry.payer,
          expected: { payTo: entry.payTo, amount: entry.amount, scheme: entry.scheme === "upto" ? "upto" : "exact" }
        },
        payees.map((p) => p.record)
      )
    })

  const reconcileEntry = (entry: JournalEntry) =>
    Effect.gen(function* () {
      const { payer, authorization } = entry
      if (payer === null || authorization === null) return null
      const found = yield* findings({ ...entry, payer }, authorization.expirationLedger, authorization.nonce)
      const outcome = judgeUnresolved(entry, found)
      if (outcome === null) return null
      const nowMs = yield* Clock.currentTimeMillis
      const changed = yield* journal.reconcile(entry.id, outcome, nowMs)
      if (!changed) return null
      yield* Effect.logInfo(
        `settlement ${entry.id} reconciled: ${outcome._tag === "Settled" ? "settled" : "failed"}: ${outcome.reason}`
      )
      const paid = found.transfers[0]
      if (outcome._tag === "Settled" && outcome.transaction !== null && paid !== undefined)
        yield* recordPaid(entry, outcome.transaction, paid.amount, nowMs)
      return outcome._tag
    }).pipe(
      Effect.catchTag("LedgerUnavailable", (e) =>
        Effect.as(
          Effect.logWarning(
            `settlement ${entry.id}: the ledger could not be read (${e.message}); retried on the next pass`
          ),
          null
        )
      )
    )

  /** Where the next pass starts: after the last entry the previous pass looked at; null from the first. */
  const cursor = yield* Ref.make<SettlementId | null>(null)

  const reconcileOnce = Effect.gen(function* () {
    const entries = yield* journal.unresolved(BATCH, yield* Ref.get(cursor))
    yield* Ref.set(cursor, entries.length < BATCH ? null : entries[entries.length - 1]!.id)
    const outcomes = yield* Effect.forEach(entries, reconcileEntry)
    return {
      checked: entries.length,
      settled: outcomes.filter((o) => o === "Settled").length,
      unpaid: outcomes.filter((o) => o === "Unpaid").length
    } satisfies ReconcileReport
  }).pipe(Effect.withSpan("Reconciler.reconcileOnce"))

  return { reconcileOnce } satisfies ReconcilerShape
})
