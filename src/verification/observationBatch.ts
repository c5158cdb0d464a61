import { Clock, type Deferred, Effect } from "effect"
import { AppConfig } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import type { MetricsSnapshot, StoredStanding } from "../domain/metrics.js"
import type { HourlyRollup, RecordedObservation } from "../domain/observations.js"
import type { ResourceRecord } from "../domain/resources.js"
import { EconomicEventsRepo } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ProbeScheduleRepo } from "../store/ProbeScheduleRepo.js"
import { type ListingState, ResourceListingRepo } from "../store/ResourceListingRepo.js"
import type { ProbeBookkeeping } from "./EvidenceRecorder.js"
import { windowMs } from "./metrics.js"
import { listingAfterProbe } from "./probeListing.js"
import { addObservation, encodeWindow, type RollingWindow, signerChange } from "./rollingWindow.js"
import type { StandingWrites } from "./standingWrites.js"
import type { Standing } from "./status.js"

/** One observation waiting for the writer, with what runs after it in the same transaction. */
export interface PendingObservation {
  readonly record: ResourceRecord
  readonly observation: RecordedObservation
  readonly bookkeeping: ProbeBookkeeping
  readonly done: Deferred.Deferred<Standing | null>
}

/** What the listing rule needs of an observation. */
const factOf = (o: RecordedObservation) => ({ healthy: o.outcome === "healthy", atMs: Date.parse(o.observedAt) })

/**
 * One batch of observations in one transaction, in a fixed number of statements whatever its
 * size: the resources' standings, windows, payments and listings are read at once; each
 * observation is added to its resource's rolling window (O(1): one hourly bucket and the
 * newest-probe facts change) and the metrics and standing derived in memory; then the
 * observations, the hours they closed (rollups), the metrics rows, the listing rule's changes and
 * the schedule's completed claims are written in bulk. Only a standing that moved costs its own
 * statements (a transition). Answers each observation's new standing, in the batch's order.
 */
export const makeWriteBatch = (standing: StandingWrites) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const listings = yield* ResourceListingRepo
    const observations = yield* ObservationsRepo
    const metrics = yield* MetricsRepo
    const economic = yield* EconomicEventsRepo
    const schedule = yield* ProbeScheduleRepo

    /** The batch's probe bookkeeping, in bulk: the listing rule where it applies, and the claims completed, per owner. */
    const bookkeep = (batch: ReadonlyArray<PendingObservation>) =>
      Effect.gen(function* () {
        yield* listings.afterProbes(
          batch.flatMap((p) =>
            p.bookkeeping.listing
              ? [
                  {
                    id: p.record.resource.id,
                    decide: (state: ListingState) =>
                      listingAfterProbe(state, factOf(p.observation), config.verification.delistAfterHours)
                  }
                ]
              : []
          ),
          "probe"
        )
        const claims = new Map<string, Array<{ resourceId: ResourceId; nextDueMs: number }>>()
        for (const p of batch) {
          const claim = p.bookkeeping.claim
          if (claim === undefined) continue
          const done = claims.get(claim.owner) ?? []
          done.push({ resourceId: p.record.resource.id, nextDueMs: claim.nextDueMs })
          claims.set(claim.owner, done)
        }
        yield* Effect.forEach(claims, ([owner, done]) => schedule.complete(owner, done), { discard: true })
      })

    return (batch: ReadonlyArray<PendingObservation>) =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        const records = new Map(batch.map((p) => [p.record.resource.id, p.record] as const))
        const ids = [...records.keys()]
        const standings = new Map((yield* metrics.standings(ids)).map((s) => [s.resourceId, s] as const))
        const states = yield* metrics.windowStates(ids)
        const payments = yield* economic.summaries(
          [...records.values()]
            .filter((r) => standings.has(r.resource.id))
            .map((r) => ({ resourceId: r.resource.id, payTos: standing.payTosOf(r) })),
          nowMs - windowMs(config.verification),
          config.verification.minDistinctPayers
        )
        // Read (or rebuild) each window before the batch's observations are stored: it must not hold them yet.
        const windows = new Map<string, RollingWindow>()
        for (const id of ids) {
          if (standings.has(id))
            windows.set(id, yield* standing.windowOfResource(records.get(id)!, states.get(id), nowMs))
        }
        const rollups: Array<{ resourceId: ResourceId; rollup: HourlyRollup }> = []
        const rows = new Map<string, MetricsSnapshot>()
        const moves: Array<{ id: ResourceId; from: StoredStanding; next: Standing }> = []
        const notes: Array<{ id: ResourceId; standing: Standing; change: { from: string; to: string } }> = []
        const results = batch.map((item): Standing | null => {
          const id = item.record.resource.id
          const stored = standings.get(id)
          const window = windows.get(id)
          if (stored === undefined || window === undefined) return null
          const added = addObservation(window, item.observation, item.record.paymentOptions, config.verification)
          for (const rollup of added.closed) rollups.push({ resourceId: id, rollup })
          windows.set(id, added.window)
          const derived = standing.deriveFrom(id, stored, added.window, payments.get(id)!, nowMs)
          rows.set(id, derived.metrics)
          if (stored.status !== derived.next.status || stored.level !== derived.next.level)
            moves.push({ id, from: stored, next: derived.next })
          const change = signerChange(window, added.window)
          if (change !== null) notes.push({ id, standing: derived.next, change })
          // The next item of the same resource in this batch starts from what this one left.
          standings.set(id, { ...stored, status: derived.next.status, level: derived.next.level })
          return derived.next
        })
        yield* observations.insert(batch.map((p) => p.observation))
        yield* observations.upsertRollups(rollups)
        yield* metrics.upsert(
          [...rows].map(([id, row]) => ({ metrics: row, windowState: encodeWindow(windows.get(id)!) })),
          new Date(nowMs).toISOString()
        )
        yield* Effect.forEach(moves, (m) => standing.moveTo(m.id, m.from, m.next, nowMs), { discard: true })
        yield* Effect.forEach(notes, (n) => standing.signerNote(n.id, n.standing, n.change, nowMs), { discard: true })
        yield* bookkeep(batch)
        return results
      })
  })
