import { Context, Effect, Either, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { LedgerNotReadable, NotFound, TransactionNotConfirmed } from "../domain/errors.js"
import type { OutcomeAnswer, OutcomeReport } from "../domain/outcomes.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { EconomicEventsRepo } from "../store/EconomicEventsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import { outcomeEvent, paidEntry } from "./outcome.js"
import { ENTRIES_READ } from "./Preflight.js"

export interface OutcomesShape {
  /**
   * Records a buyer's report of a purchase's outcome, once per transaction. Refused unless the
   * ledger shows the transaction paying the payee of an entry at the URL at least its price
   * (TransactionNotConfirmed), or when no entry is at the URL (NotFound) or the ledger cannot be
   * read (LedgerNotReadable): nothing is stored then.
   */
  readonly report: (
    report: OutcomeReport
  ) => Effect.Effect<OutcomeAnswer, NotFound | TransactionNotConfirmed | LedgerNotReadable>
}

/**
 * `POST /v1/preflight/outcomes`: what buyers' guards saw of their purchases, taken as buyer
 * evidence apart from probes only when the ledger backs it (docs/trust.md).
 */
export class Outcomes extends Context.Tag("sextant/Outcomes")<Outcomes, OutcomesShape>() {
  static readonly Live = Layer.effect(
    Outcomes,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const reads = yield* ResourceReadsRepo
  const ledger = yield* LedgerReader
  const events = yield* EconomicEventsRepo
  const recorder = yield* EvidenceRecorder
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  // Check-then-insert per transaction: two reports of one transaction at once store one.
  const once = yield* Effect.makeSemaphore(1)

  const entriesAt = (report: OutcomeReport) => {
    const none = new NotFound({
      message: `no catalog entry${report.resourceId === undefined ? "" : ` "${report.resourceId}"`} at ${report.url}`
    })
    // The schema's URL pattern lets through strings no URL parser reads; no entry is at one.
    if (!URL.canParse(report.url)) return Effect.fail(none)
    return Effect.flatMap(reads.aroundUrl(report.url, new URL(report.url).origin, [], ENTRIES_READ), (around) => {
      const entries = around.filter(
        (r) => r.resource.url === report.url && (report.resourceId === undefined || r.resource.id === report.resourceId)
      )
      return entries.length > 0 ? Effect.succeed(entries) : Effect.fail(none)
    })
  }

  const stored = (report: OutcomeReport) =>
    Effect.map(
      events.reported("outcome", report.transactionHash),
      Option.getOrThrowWith(() => new Error("an outcome report just stored was not found"))
    )

  const report = (report: OutcomeReport) =>
    Effect.gen(function* () {
      const entries = yield* entriesAt(report)
      const found = yield* ledger.transaction(report.transactionHash).pipe(
        Effect.mapError(
          (e) =>
            new LedgerNotReadable({
              message: `the ledger could not be read, so transaction ${report.transactionHash} cannot be checked: ${e.message}`
            })
        )
      )
      const paid = paidEntry(entries, Option.getOrNull(found), report.transactionHash, deployment)
      if (Either.isLeft(paid)) return yield* new TransactionNotConfirmed({ message: paid.left })
      const tx = Option.getOrThrow(found)
      return yield* once
        .withPermits(1)(
          Effect.gen(function* () {
            const before = yield* events.reported("outcome", report.transactionHash)
            if (Option.isSome(before)) return { before: before.value, recorded: false }
            yield* recorder.recordEconomic(outcomeEvent(report, paid.right, tx.closedAt), [paid.right.record])
            return { before: yield* stored(report), recorded: true }
          })
        )
        .pipe(
          Effect.map(
            ({ before, recorded }): OutcomeAnswer => ({
              resourceId: paid.right.record.resource.id,
              outcome: report.outcome,
              transactionHash: report.transactionHash,
              recorded,
              evidence: before
            })
          )
        )
    }).pipe(Effect.withSpan("Outcomes.report"))

  return Outcomes.of({ report })
})
