import { Clock, Context, Effect, Layer, Option } from "effect"
import type { EconomicEvent } from "../domain/evidence.js"
import type { RecordedObservation } from "../domain/observations.js"
import type { ResourceRecord } from "../domain/resources.js"
import { EconomicEventsRepo, type EventResolution, type PendingEvent } from "../store/EconomicEventsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { chunksOf } from "../store/repository.js"
import { sortableId } from "../store/sortableId.js"
import { initialResolution } from "./confirmation.js"
import { BATCH, ObservationWriter } from "./ObservationWriter.js"
import { makeStandingWrites } from "./standingWrites.js"
import type { Standing } from "./status.js"

/** What a probe's observation also settles, in its batch's transaction. */
export interface ProbeBookkeeping {
  /** The listing rule applies (probeListing.ts): a probe of the service's own, not an observation made elsewhere. */
  readonly listing: boolean
  /** The schedule's claim the probe completes: the next due time, set while `owner` still holds the lease. */
  readonly claim?: { readonly owner: string; readonly nextDueMs: number }
}

export interface EvidenceRecorderShape {
  /** VALIDATING while the first probe of a DISCOVERED resource is in flight (docs/decisions.md). */
  readonly beginProbe: (record: ResourceRecord) => Effect.Effect<void>
  /** Re-derives one resource's status after an operator set or lifted its quarantine (docs/decisions.md, Operator curation). */
  readonly rederive: (record: ResourceRecord) => Effect.Effect<void>
  /**
   * Stores an observation batched with other probes' in one transaction (ObservationWriter), with
   * its bookkeeping (the listing rule, the schedule's claim) in that transaction too; resolves
   * once the batch committed, with the resource's new standing.
   */
  readonly recordObservation: (
    record: ResourceRecord,
    observation: RecordedObservation,
    bookkeeping?: ProbeBookkeeping
  ) => Effect.Effect<Standing | null>
  /**
   * Stores a reported payment outcome, `pending` until the ledger confirms it when it can be
   * checked (confirmation.ts), in the caller's transaction if it runs in one; true when it counts
   * already (`failed`), the only case whose resources need `refreshAbout`.
   */
  readonly storeEconomic: (event: EconomicEvent) => Effect.Effect<boolean>
  /**
   * Re-derives many resources in short transactions (a payee with a thousand resources never
   * holds the writer for long); `first` runs in the first of them.
   */
  readonly refreshAbout: (about: ReadonlyArray<ResourceRecord>, first?: Effect.Effect<void>) => Effect.Effect<void>
  /**
   * `storeEconomic`, then the resources it is about (the receipt's service, the settled payee's
   * listed resources) re-derived when it counts: a pending report changes no figure, so a
   * payment's cost does not grow with the payee's resources.
   */
  readonly recordEconomic: (event: EconomicEvent, about: ReadonlyArray<ResourceRecord>) => Effect.Effect<void>
  /** Stores what the ledger showed for a pending payment and re-derives the resources it is about. */
  readonly resolveEconomic: (event: PendingEvent, resolution: EventResolution) => Effect.Effect<void>
}

/** The write side of evidence: observations and economic events in, metrics rows, statuses and transitions out. */
export class EvidenceRecorder extends Context.Tag("sextant/EvidenceRecorder")<
  EvidenceRecorder,
  EvidenceRecorderShape
>() {
  static readonly Live = Layer.effect(
    EvidenceRecorder,
    Effect.suspend(() => make)
  ).pipe(Layer.provide(ObservationWriter.Live))
}

const NO_BOOKKEEPING: ProbeBookkeeping = { listing: false }

const make = Effect.gen(function* () {
  const writer = yield* ObservationWriter
  const standing = yield* makeStandingWrites
  const reads = yield* ResourceReadsRepo
  const economic = yield* EconomicEventsRepo

  // One transaction is evidence about one resource.
  const storeEconomic = (event: EconomicEvent) =>
    Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const elsewhere =
        event.transactionHash === null
          ? null
          : yield* economic.claimedElsewhere(event.transactionHash, event.resourceId)
      const initial: EventResolution =
        elsewhere === null
          ? initialResolution(event, nowMs)
          : {
              state: "rejected",
              reason: `transaction ${event.transactionHash} already counts for resource ${elsewhere}: one transaction is evidence about one resource`,
              ledger: null,
              nextCheckMs: null
            }
      yield* economic.insert(sortableId("eco", nowMs), event, initial, nowMs)
      return initial.state === "failed" || initial.state === "confirmed"
    })

  // BATCH resources per transaction, so a payee with a thousand resources never holds the writer for long.
  const refreshAbout = (about: ReadonlyArray<ResourceRecord>, first: Effect.Effect<void> = Effect.void) => {
    const [head = [], ...rest] = chunksOf(about, BATCH)
    const batch = (chunk: ReadonlyArray<ResourceRecord>, i: number) =>
      writer.serialized(
        Effect.zipRight(i === 0 ? first : Effect.void, Effect.forEach(chunk, standing.refresh, { discard: true }))
      )
    return Effect.forEach([head, ...rest], batch, { discard: true })
  }

  return {
    beginProbe: (record) =>
      record.resource.status !== "DISCOVERED"
        ? Effect.void
        : writer.serialized(
            Effect.gen(function* () {
              const stored = yield* standing.standingOf(record.resource.id)
              if (Option.isNone(stored) || stored.value.status !== "DISCOVERED") return
              const nowMs = yield* Clock.currentTimeMillis
              yield* standing.moveTo(
                record.resource.id,
                stored.value,
                { status: "VALIDATING", level: 0, reason: "first probe in flight" },
                nowMs
              )
            })
          ),
    rederive: (record) =>
      writer.serialized(standing.refresh(record)).pipe(Effect.asVoid, Effect.withSpan("EvidenceRecorder.rederive")),
    recordObservation: (record, observation, bookkeeping = NO_BOOKKEEPING) =>
      writer.write(record, observation, bookkeeping).pipe(Effect.withSpan("EvidenceRecorder.recordObservation")),
    storeEconomic,
    refreshAbout,
    recordEconomic: (event, about) =>
      Effect.flatMap(storeEconomic(event), (counts) => (counts ? refreshAbout(about) : Effect.void)).pipe(
        Effect.withSpan("EvidenceRecorder.recordEconomic")
      ),
    resolveEconomic: (event, resolution) =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        if (resolution.state === "pending") return yield* economic.resolve(event.id, resolution, nowMs)
        const about =
          event.resourceId !== null
            ? Option.toArray(yield* reads.get(event.resourceId))
            : event.payTo !== null
              ? yield* reads.byPayTo(event.payTo)
              : []
        // The event's new state commits with the standings of (the first batch of) the resources it
        // is about: a reader never sees a payment confirmed and its resource not yet lifted by it.
        yield* refreshAbout(about, economic.resolve(event.id, resolution, nowMs))
      }).pipe(Effect.withSpan("EvidenceRecorder.resolveEconomic"))
  } satisfies EvidenceRecorderShape
})
