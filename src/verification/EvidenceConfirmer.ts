import { Clock, Context, type Duration, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import { LedgerReader, type LedgerReaderShape } from "../ledger/LedgerReader.js"
import { repeatedPass } from "../lifecycle/repeatedPass.js"
import { EconomicEventsRepo, type EventResolution, type PendingEvent } from "../store/EconomicEventsRepo.js"
import { type ConfirmationRules, judgeFunding, judgeTransaction } from "./confirmation.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"

/** Pending payments looked at per pass; the rest wait for the next one. */
const BATCH = 100

export interface ConfirmReport {
  readonly checked: number
  readonly confirmed: number
  readonly rejected: number
}

export interface EvidenceConfirmerShape {
  /** One pass: judges the pending payments that are due against the ledger. */
  readonly confirmOnce: Effect.Effect<ConfirmReport>
}

/**
 * Confirms reported payments on the ledger: a transaction hash from a receipt, a settle answer or
 * an economic probe counts only once the ledger shows it paying what was expected, from a payer
 * that is not the payee and that the payee did not fund within the window (docs/trust.md).
 */
export class EvidenceConfirmer extends Context.Tag("sextant/EvidenceConfirmer")<
  EvidenceConfirmer,
  EvidenceConfirmerShape
>() {
  static readonly Live = Layer.effect(
    EvidenceConfirmer,
    Effect.suspend(() => make)
  )

  /** Confirms every `interval` for as long as the scope lives (the serving process). */
  static readonly schedule = (interval: Duration.DurationInput) =>
    Layer.scopedDiscard(
      Effect.flatMap(EvidenceConfirmer, ({ confirmOnce }) =>
        repeatedPass(confirmOnce, interval, "confirmation pass failed")
      )
    )
}

/**
 * The payee's transfers of the asset to a confirmed payment's payer in the `windowLedgers` (the
 * metric window, at about 5 s a ledger) before it: what judgeFunding judges.
 */
const fundingReader =
  (ledger: LedgerReaderShape, assetContract: string, windowLedgers: number) =>
  (event: PendingEvent, confirmed: EventResolution) =>
    confirmed.state !== "confirmed" || confirmed.payer === undefined || confirmed.ledger === null
      ? Effect.succeed([])
      : ledger.transferEvents({
          contract: assetContract,
          from: event.expected.payTo,
          to: confirmed.payer,
          startLedger: Math.max(1, confirmed.ledger - windowLedgers),
          endLedger: confirmed.ledger
        })

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const events = yield* EconomicEventsRepo
  const ledger = yield* LedgerReader
  const recorder = yield* EvidenceRecorder
  const rules: ConfirmationRules = {
    assetContract: config.asset.assetContract,
    confirmTimeoutSeconds: config.ledger.confirmTimeoutSeconds,
    recheckMs: Math.round(config.ledger.pollIntervalSeconds * 1000)
  }

  const fundingOf = fundingReader(ledger, rules.assetContract, Math.ceil((config.verification.windowHours * 3600) / 5))

  const confirmEvent = (event: PendingEvent) =>
    Effect.gen(function* () {
      const found = yield* ledger.transaction(event.transactionHash)
      const confirmed = judgeTransaction(event, found, yield* Clock.currentTimeMillis, rules)
      const resolution = judgeFunding(event, confirmed, yield* fundingOf(event, confirmed))
      yield* recorder.resolveEconomic(event, resolution)
      return resolution.state
    }).pipe(
      // A ledger that cannot answer proves nothing either way: the payment stays pending.
      Effect.catchTag("LedgerUnavailable", (e) =>
        Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
          recorder.resolveEconomic(event, {
            state: "pending",
            reason: `the ledger could not be read: ${e.message}`,
            ledger: null,
            nextCheckMs: nowMs + rules.recheckMs
          })
        ).pipe(Effect.as("pending" as const))
      )
    )

  const confirmOnce = Effect.gen(function* () {
    const due = yield* events.due(yield* Clock.currentTimeMillis, BATCH)
    const states = yield* Effect.forEach(due, confirmEvent)
    return {
      checked: due.length,
      confirmed: states.filter((s) => s === "confirmed").length,
      rejected: states.filter((s) => s === "rejected").length
    } satisfies ConfirmReport
  }).pipe(Effect.withSpan("EvidenceConfirmer.confirmOnce"))

  return { confirmOnce } satisfies EvidenceConfirmerShape
})
