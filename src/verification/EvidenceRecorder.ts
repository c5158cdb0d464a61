import { SqlClient } from "@effect/sql"
import { Clock, Context, Deferred, Effect, Exit, Layer, Option, Queue } from "effect"
import { AppConfig } from "../config.js"
import type { EconomicEvent } from "../domain/evidence.js"
import type { StoredStanding } from "../domain/metrics.js"
import type { RecordedObservation } from "../domain/observations.js"
import type { ResourceRecord, ServiceStatus } from "../domain/resources.js"
import { EconomicEventsRepo, type EventResolution, type PendingEvent } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { transactional } from "../store/repository.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { sortableId } from "../store/sortableId.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { initialResolution } from "./confirmation.js"
import { snapshotFrom, windowMs } from "./metrics.js"
import { addObservation, decodeWindow, encodeWindow, type RollingWindow, statsAt, windowOf, windowStartMs } from "./rollingWindow.js"
import { deriveStanding, type Standing } from "./status.js"

/** Observations written per transaction at most: one fsync for many probes, yet short enough that a settle's reservation waits little. */
const BATCH = 256
/**
 * How long the writer lets a batch gather after its first observation. SQLite's commit (an fsync)
 * blocks the event loop, so without a pause no other probe can finish during it and batches stay
 * at one; 10 ms is a few fsyncs, and what one probe's answer waits at most for it.
 */
const GATHER_MS = 10

/** One observation waiting for the writer, with what runs after it in the same transaction. */
interface Pending {
  readonly record: ResourceRecord
  readonly observation: RecordedObservation
  readonly afterwards: Effect.Effect<void>
  readonly done: Deferred.Deferred<Standing | null>
}

const make = Effect.gen(function* () {
  const transaction = transactional(yield* SqlClient.SqlClient)
  const config = yield* AppConfig
  const resources = yield* ResourcesRepo
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const transitions = yield* TransitionsRepo
  const economic = yield* EconomicEventsRepo
  // A refresh reads the resource's window and writes the derived rows; one writer at a time keeps
  // a probe batch, a settlement's evidence and an operator's change from interleaving them.
  const lock = yield* Effect.makeSemaphore(1)
  const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(transaction(effect))

  const moveTo = (resourceId: string, from: { status: ServiceStatus; level: number }, next: Standing, nowMs: number) =>
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
      yield* resources.setStatus(resourceId, next.status, next.level)
    })

  /** The stored status, level and metrics row; read under the lock, since they change with every refresh. */
  const standingOf = (resourceId: string) =>
    Effect.map(metrics.standings([resourceId]), (rows) => Option.fromNullable(rows[0]))

  /**
   * A resource's rolling window as stored; a row from before rolling windows existed (or none) is
   * rebuilt once from the raw observations still kept.
   */
  const windowOfResource = (record: ResourceRecord, stored: string | null | undefined, nowMs: number) => {
    const decoded = decodeWindow(stored ?? null)
    return decoded !== null
      ? Effect.succeed(decoded)
      : Effect.map(observations.window(record.resource.id, windowStartMs(nowMs, config.verification)), (raw) =>
          windowOf(raw, record.paymentOptions, config.verification)
        )
  }

  /** Derives and stores the metrics row and the standing from `window`, and a transition if it moved. */
  const derive = (record: ResourceRecord, stored: StoredStanding, window: RollingWindow, nowMs: number) =>
    Effect.gen(function* () {
      const id = record.resource.id
      const payTos = [...new Set(record.paymentOptions.map((o) => o.payTo))]
      const payments = yield* economic.summary(id, payTos, nowMs - windowMs(config.verification))
      const stats = statsAt(window, nowMs, payments, config.verification)
      yield* metrics.upsert(
        snapshotFrom(id, stats, stored.snapshot, payments.everSucceeded),
        encodeWindow(window),
        new Date(nowMs).toISOString()
      )
      const next = deriveStanding(stats, payments.everSucceeded, nowMs, config.verification, stored.operatorQuarantine)
      yield* moveTo(id, stored, next, nowMs)
      return next
    })

  /** Re-derives one resource from its stored window (new economic evidence, an operator's change). */
  const refresh = (record: ResourceRecord) =>
    Effect.gen(function* () {
      const id = record.resource.id
      const stored = yield* standingOf(id)
      if (Option.isNone(stored)) return null
      const nowMs = yield* Clock.currentTimeMillis
      const states = yield* metrics.windowStates([id])
      return yield* derive(record, stored.value, yield* windowOfResource(record, states.get(id), nowMs), nowMs)
    })

  /**
   * One batch of observations in one transaction: each is stored, added to its resource's rolling
   * window (O(1): one hourly bucket and the newest-probe facts change), the hours it closed are
   * stored as rollups, and the metrics row and standing are derived from the window.
   */
  const writeBatch = (batch: ReadonlyArray<Pending>) =>
    Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const ids = [...new Set(batch.map((p) => p.record.resource.id))]
      const standings = new Map((yield* metrics.standings(ids)).map((s) => [s.resourceId, s] as const))
      const states = yield* metrics.windowStates(ids)
      const windows = new Map<string, RollingWindow>()
      const results: Array<Standing | null> = []
      for (const item of batch) {
        const id = item.record.resource.id
        const stored = standings.get(id)
        // Read (or rebuild) the window before storing the observation, which it must not hold yet.
        const window = stored === undefined ? null : (windows.get(id) ?? (yield* windowOfResource(item.record, states.get(id), nowMs)))
        yield* observations.insert(item.observation)
        if (stored === undefined || window === null) {
          results.push(null)
        } else {
          const added = addObservation(window, item.observation, item.record.paymentOptions, config.verification)
          if (added.closed.length > 0) yield* observations.upsertRollups(id, added.closed)
          windows.set(id, added.window)
          const next = yield* derive(item.record, stored, added.window, nowMs)
          // The next item of the same resource in this batch starts from what this one left.
          standings.set(id, { ...stored, status: next.status, level: next.level, snapshot: stored.snapshot })
          results.push(next)
        }
        yield* item.afterwards
      }
      return results
    })

  const queue = yield* Queue.unbounded<Pending>()
  /**
   * The writer: takes whatever probes queued up (at most BATCH) and writes them in one transaction,
   * so a cycle's fsyncs are per batch, not per probe, and a busy writer gets larger batches. A
   * failed batch fails each of its probes with the cause.
   */
  const writer = Effect.gen(function* () {
    const first = yield* Queue.take(queue)
    // Real time, not the Clock: a test's TestClock must not hold the writer.
    if ((yield* Queue.size(queue)) < BATCH - 1) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, GATHER_MS)))
    const items = [first, ...(yield* Queue.takeUpTo(queue, BATCH - 1))]
    const exit = yield* Effect.exit(serialized(writeBatch(items)))
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
     * with other probes' observations in one transaction; `afterwards` (the listing rule) runs in
     * that transaction right after it. Resolves once the batch committed.
     */
    recordObservation: (record: ResourceRecord, observation: RecordedObservation, afterwards: Effect.Effect<void> = Effect.void) =>
      Effect.gen(function* () {
        const done = yield* Deferred.make<Standing | null>()
        yield* Queue.offer(queue, { record, observation, afterwards, done })
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
        yield* economic.resolve(event.id, resolution, nowMs)
        if (resolution.state === "pending") return
        const about =
          event.resourceId !== null
            ? Option.toArray(yield* resources.get(event.resourceId))
            : event.payTo !== null
              ? yield* resources.byPayTo(event.payTo)
              : []
        yield* refreshAll(about)
      }).pipe(Effect.withSpan("EvidenceRecorder.resolveEconomic"))
  }

  function storeEconomic(event: EconomicEvent) {
    return Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const initial = initialResolution(event, nowMs)
      yield* economic.insert(sortableId("eco", nowMs), event, initial, nowMs)
      return initial.state === "failed" || initial.state === "confirmed"
    })
  }

  /**
   * Re-derives many resources after the event about them was committed on its own: in transactions
   * of BATCH resources, so one payee with a thousand resources never holds the writer for long.
   */
  function refreshAll(about: ReadonlyArray<ResourceRecord>) {
    return Effect.forEach(chunks(about, BATCH), (chunk) => serialized(Effect.forEach(chunk, refresh, { discard: true })), {
      discard: true
    })
  }
})

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** The write side of evidence: observations and economic events in, metrics rows, statuses and transitions out. */
export class EvidenceRecorder extends Context.Tag("sextant/EvidenceRecorder")<
  EvidenceRecorder,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.scoped(EvidenceRecorder, make)
}
