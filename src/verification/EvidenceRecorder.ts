import { Clock, Context, Deferred, Effect, Exit, Layer, Option, Queue } from "effect"
import { AppConfig } from "../config.js"
import type { EconomicEvent } from "../domain/evidence.js"
import type { MetricsSnapshot, StoredStanding } from "../domain/metrics.js"
import type { HourlyRollup, RecordedObservation } from "../domain/observations.js"
import type { ResourceRecord, ServiceStatus } from "../domain/resources.js"
import { EconomicEventsRepo, type EventResolution, type PaymentSummary, type PendingEvent } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { StoreTransactions } from "../store/StoreTransactions.js"
import { ProbeScheduleRepo } from "../store/ProbeScheduleRepo.js"
import { chunksOf } from "../store/repository.js"
import { type ListingState, ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { sortableId } from "../store/sortableId.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { initialResolution } from "./confirmation.js"
import { snapshotFrom, windowMs } from "./metrics.js"
import { addObservation, encodeWindow, type RollingWindow, signerChange, statsAt } from "./rollingWindow.js"
import { storedWindow } from "./storedWindow.js"
import { listingAfterProbe } from "./probeListing.js"
import { deriveStanding, type Standing, statusRules } from "./status.js"
import type { ResourceId } from "../domain/ids.js"

/** Observations written per transaction at most: a few statements for many probes, yet short enough that a settle's reservation waits little. */
const BATCH = 256
/**
 * How long the writer lets a batch gather after its first observation. A batch costs the same
 * statements whatever its size, and bun:sqlite blocks the event loop while they run, so without a
 * pause no other probe could finish meanwhile and batches would stay small; 10 ms is what one
 * probe's answer waits at most for it.
 */
const GATHER_MS = 10

/** What a probe's observation also settles, in its batch's transaction. */
export interface ProbeBookkeeping {
  /** The listing rule applies (probeListing.ts): a probe of the service's own, not an observation made elsewhere. */
  readonly listing: boolean
  /** The schedule's claim the probe completes: the next due time, set while `owner` still holds the lease. */
  readonly claim?: { readonly owner: string; readonly nextDueMs: number }
}

export interface EvidenceRecorderShape {
  /** VALIDATING while the first probe of a DISCOVERED resource is in flight. */
  readonly beginProbe: (record: ResourceRecord) => Effect.Effect<void>
  /** Re-derives one resource's status after an operator set or lifted its quarantine. */
  readonly rederive: (record: ResourceRecord) => Effect.Effect<void>
  /**
   * Stores an observation batched with other probes' in one transaction, with its bookkeeping;
   * resolves once the batch committed, with the resource's new standing.
   */
  readonly recordObservation: (record: ResourceRecord, observation: RecordedObservation, bookkeeping?: ProbeBookkeeping) => Effect.Effect<Standing | null>
  /**
   * Stores a reported payment outcome in the caller's transaction if it runs in one; true when it
   * counts already (`failed`), the only case whose resources need `refreshAbout`.
   */
  readonly storeEconomic: (event: EconomicEvent) => Effect.Effect<boolean>
  /** Re-derives many resources in short transactions; `first` runs in the first of them. */
  readonly refreshAbout: (about: ReadonlyArray<ResourceRecord>, first?: Effect.Effect<void>) => Effect.Effect<void>
  /** `storeEconomic`, then the resources it is about re-derived when it counts. */
  readonly recordEconomic: (event: EconomicEvent, about: ReadonlyArray<ResourceRecord>) => Effect.Effect<void>
  /** Stores what the ledger showed for a pending payment and re-derives the resources it is about. */
  readonly resolveEconomic: (event: PendingEvent, resolution: EventResolution) => Effect.Effect<void>
}

/** The write side of evidence: observations and economic events in, metrics rows, statuses and transitions out. */
export class EvidenceRecorder extends Context.Tag("sextant/EvidenceRecorder")<EvidenceRecorder, EvidenceRecorderShape>() {
  static readonly Live = Layer.scoped(EvidenceRecorder, Effect.suspend(() => make))
}

const NO_BOOKKEEPING: ProbeBookkeeping = { listing: false }

/** What the listing rule needs of an observation. */
const factOf = (o: RecordedObservation) => ({ healthy: o.outcome === "healthy", atMs: Date.parse(o.observedAt) })

/** One observation waiting for the writer, with what runs after it in the same transaction. */
interface Pending {
  readonly record: ResourceRecord
  readonly observation: RecordedObservation
  readonly bookkeeping: ProbeBookkeeping
  readonly done: Deferred.Deferred<Standing | null>
}

const make = Effect.gen(function* () {
  const { transaction } = yield* StoreTransactions
  const config = yield* AppConfig
  const listings = yield* ResourceListingRepo
  const reads = yield* ResourceReadsRepo
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const transitions = yield* TransitionsRepo
  const economic = yield* EconomicEventsRepo
  const schedule = yield* ProbeScheduleRepo
  // A refresh reads the resource's window and writes the derived rows; one writer at a time keeps
  // a probe batch, a settlement's evidence and an operator's change from interleaving them.
  const lock = yield* Effect.makeSemaphore(1)
  const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(transaction(effect))

  const moveTo = (resourceId: ResourceId, from: { status: ServiceStatus; level: number }, next: Standing, nowMs: number) =>
    Effect.gen(function* () {
      if (from.status === next.status && from.level === next.level) return
      yield* transitions.insert(sortableId("tr", nowMs), {
        resourceId,
        from: from.status,
        to: next.status,
        fromLevel: from.level,
        toLevel: next.level,
        reason: next.reason,
        at: new Date(nowMs).toISOString()
      })
      yield* listings.setStatus(resourceId, next.status, next.level)
    })

  /**
   * A note in the transitions without a change of status: the seller's offer signing key changed,
   * which a buyer that takes the signer as the seller's identity must be able to see.
   */
  const signerNote = (resourceId: ResourceId, standing: Standing, change: { from: string; to: string }, nowMs: number) =>
    transitions.insert(sortableId("tr", nowMs), {
      resourceId,
      from: standing.status,
      to: standing.status,
      fromLevel: standing.level,
      toLevel: standing.level,
      reason: `offer signing key changed from ${change.from} to ${change.to}`,
      at: new Date(nowMs).toISOString()
    })

  /** The stored status, level and metrics row; read under the lock, since they change with every refresh. */
  const standingOf = (resourceId: ResourceId) =>
    Effect.map(metrics.standings([resourceId]), (rows) => Option.fromNullable(rows[0]))

  /** A resource's rolling window as stored; one from before rolling windows is rebuilt once, then stored. */
  const windowOfResource = storedWindow(observations, config.verification)
  const rules = statusRules(config)

  /** The metrics row and standing `window` gives, as of `nowMs`. No I/O. */
  const deriveFrom = (id: ResourceId, stored: StoredStanding, window: RollingWindow, payments: PaymentSummary, nowMs: number) => {
    const stats = statsAt(window, nowMs, payments, config.verification)
    return {
      metrics: snapshotFrom(id, stats, stored.snapshot, payments.everSucceeded),
      next: deriveStanding(stats, payments.everSucceeded, nowMs, rules, stored.operatorQuarantine)
    }
  }

  const payTosOf = (record: ResourceRecord) => [...new Set(record.paymentOptions.map((o) => o.payTo))]

  /** Re-derives one resource from its stored window (new economic evidence, an operator's change). */
  const refresh = (record: ResourceRecord) =>
    Effect.gen(function* () {
      const id = record.resource.id
      const stored = yield* standingOf(id)
      if (Option.isNone(stored)) return null
      const nowMs = yield* Clock.currentTimeMillis
      const states = yield* metrics.windowStates([id])
      const window = yield* windowOfResource(record, states.get(id), nowMs)
      const payments = yield* economic.summary(id, payTosOf(record), nowMs - windowMs(config.verification), config.verification.minDistinctPayers)
      const { metrics: row, next } = deriveFrom(id, stored.value, window, payments, nowMs)
      yield* metrics.upsert([{ metrics: row, windowState: encodeWindow(window) }], new Date(nowMs).toISOString())
      yield* moveTo(id, stored.value, next, nowMs)
      return next
    })

  /** The batch's probe bookkeeping, in bulk: the listing rule where it applies, and the claims completed, per owner. */
  const bookkeep = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function* () {
      yield* listings.afterProbes(
        batch.flatMap((p) =>
          p.bookkeeping.listing
            ? [{ id: p.record.resource.id, decide: (state: ListingState) => listingAfterProbe(state, factOf(p.observation), config.verification.delistAfterHours) }]
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

  /**
   * One batch of observations in one transaction, in a fixed number of statements whatever its
   * size: the resources' standings, windows, payments and listings are read at once; each
   * observation is added to its resource's rolling window (O(1): one hourly bucket and the
   * newest-probe facts change) and the metrics and standing derived in memory; then the
   * observations, the hours they closed (rollups), the metrics rows, the listing rule's changes and
   * the schedule's completed claims are written in bulk. Only a standing that moved costs its own
   * statements (a transition).
   */
  const writeBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const records = new Map(batch.map((p) => [p.record.resource.id, p.record] as const))
      const ids = [...records.keys()]
      const standings = new Map((yield* metrics.standings(ids)).map((s) => [s.resourceId, s] as const))
      const states = yield* metrics.windowStates(ids)
      const payments = yield* economic.summaries(
        [...records.values()].filter((r) => standings.has(r.resource.id)).map((r) => ({ resourceId: r.resource.id, payTos: payTosOf(r) })),
        nowMs - windowMs(config.verification),
        config.verification.minDistinctPayers
      )
      // Read (or rebuild) each window before the batch's observations are stored: it must not hold them yet.
      const windows = new Map<string, RollingWindow>()
      for (const id of ids) {
        if (standings.has(id)) windows.set(id, yield* windowOfResource(records.get(id)!, states.get(id), nowMs))
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
        const derived = deriveFrom(id, stored, added.window, payments.get(id)!, nowMs)
        rows.set(id, derived.metrics)
        if (stored.status !== derived.next.status || stored.level !== derived.next.level) moves.push({ id, from: stored, next: derived.next })
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
      yield* Effect.forEach(moves, (m) => moveTo(m.id, m.from, m.next, nowMs), { discard: true })
      yield* Effect.forEach(notes, (n) => signerNote(n.id, n.standing, n.change, nowMs), { discard: true })
      yield* bookkeep(batch)
      return results
    })

  const queue = yield* Queue.unbounded<Pending>()
  /**
   * The writer: takes whatever probes queued up (at most BATCH) and writes them in one transaction,
   * so a cycle's statements are per batch, not per probe, and a busy writer gets larger batches. A
   * failed batch fails each of its probes with the cause.
   */
  const writer = Effect.gen(function* () {
    const first = yield* Queue.take(queue)
    // Real time, not the Clock: a test's TestClock must not hold the writer.
    if ((yield* Queue.size(queue)) < BATCH - 1) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, GATHER_MS)))
    const items = [first, ...(yield* Queue.takeUpTo(queue, BATCH - 1))]
    // Relaxed: a batch lost to a power cut is probed again; an fsync per batch blocked the event loop 2-15 ms.
    const exit = yield* Effect.exit(lock.withPermits(1)(commitWithoutFlush(transaction(writeBatch(items)))))
    yield* Exit.match(exit, {
      onFailure: (cause) => Effect.forEach(items, (p) => Deferred.failCause(p.done, cause), { discard: true }),
      onSuccess: (results) => Effect.forEach(items, (p, i) => Deferred.succeed(p.done, results[i] ?? null), { discard: true })
    })
  }).pipe(Effect.forever, Effect.withTracerEnabled(false))
  yield* Effect.forkScoped(writer)

  return {
    /** docs/decisions.md: VALIDATING while the first probe of a DISCOVERED resource is in flight. */
    beginProbe: (record: ResourceRecord): Effect.Effect<void> =>
      record.resource.status !== "DISCOVERED"
        ? Effect.void
        : serialized(
            Effect.gen(function* () {
              const stored = yield* standingOf(record.resource.id)
              if (Option.isNone(stored) || stored.value.status !== "DISCOVERED") return
              const nowMs = yield* Clock.currentTimeMillis
              yield* moveTo(record.resource.id, stored.value, { status: "VALIDATING", level: 0, reason: "first probe in flight" }, nowMs)
            })
          ),

    /** Re-derives one resource's status after an operator set or lifted its quarantine (docs/decisions.md, Operator curation). */
    rederive: (record: ResourceRecord) =>
      serialized(refresh(record)).pipe(Effect.asVoid, Effect.withSpan("EvidenceRecorder.rederive")),

    /**
     * Stores the observation of `record` and brings its metrics and status up to date, batched
     * with other probes' observations in one transaction, with its `bookkeeping` (the listing rule,
     * the schedule's claim) in that transaction too. Resolves once the batch committed.
     */
    recordObservation: (record: ResourceRecord, observation: RecordedObservation, bookkeeping: ProbeBookkeeping = NO_BOOKKEEPING) =>
      Effect.gen(function* () {
        const done = yield* Deferred.make<Standing | null>()
        yield* Queue.offer(queue, { record, observation, bookkeeping, done })
        return yield* Deferred.await(done)
      }).pipe(Effect.withSpan("EvidenceRecorder.recordObservation")),

    /**
     * Stores a reported payment outcome, `pending` until the ledger confirms it when it can be
     * checked (see confirmation.ts), in the caller's transaction if it runs in one. Answers whether
     * it counts already (`failed`): only then do the resources it is about need `refreshAbout`.
     */
    storeEconomic,
    refreshAbout: refreshAll,

    /**
     * `storeEconomic`, then the resources it is about (the receipt's service, the settled payee's
     * listed resources) re-derived when it counts: a pending report changes no figure, so a
     * payment's cost does not grow with the payee's resources.
     */
    recordEconomic: (event: EconomicEvent, about: ReadonlyArray<ResourceRecord>) =>
      Effect.flatMap(storeEconomic(event), (counts) => (counts ? refreshAll(about) : Effect.void)).pipe(
        Effect.withSpan("EvidenceRecorder.recordEconomic")
      ),

    /** Stores what the ledger showed for a pending payment and re-derives the resources it is about. */
    resolveEconomic: (event: PendingEvent, resolution: EventResolution) =>
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
        yield* refreshAll(about, economic.resolve(event.id, resolution, nowMs))
      }).pipe(Effect.withSpan("EvidenceRecorder.resolveEconomic"))
  } satisfies EvidenceRecorderShape

  function storeEconomic(event: EconomicEvent) {
    return Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const elsewhere = event.transactionHash === null ? null : yield* economic.claimedElsewhere(event.transactionHash, event.resourceId)
      const initial: EventResolution =
        elsewhere === null
          ? initialResolution(event, nowMs)
          : { state: "rejected", reason: `transaction ${event.transactionHash} already counts for resource ${elsewhere}: one transaction is evidence about one resource`, ledger: null, nextCheckMs: null }
      yield* economic.insert(sortableId("eco", nowMs), event, initial, nowMs)
      return initial.state === "failed" || initial.state === "confirmed"
    })
  }

  /**
   * Re-derives many resources in transactions of BATCH resources, so one payee with a thousand
   * resources never holds the writer for long; `first` (the event's own write) runs in the first.
   */
  function refreshAll(about: ReadonlyArray<ResourceRecord>, first: Effect.Effect<void> = Effect.void) {
    const [head = [], ...rest] = chunksOf(about, BATCH)
    const batch = (chunk: ReadonlyArray<ResourceRecord>, i: number) =>
      serialized(Effect.zipRight(i === 0 ? first : Effect.void, Effect.forEach(chunk, refresh, { discard: true })))
    return Effect.forEach([head, ...rest], batch, { discard: true })
  }
})
