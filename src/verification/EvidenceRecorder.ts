import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import type { EconomicEvent } from "../domain/evidence.js"
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
import { deriveStanding, type Standing } from "./status.js"
import type { RecordedObservation } from "../domain/observations.js"
import { summarizeWindow } from "./windowStats.js"

const make = Effect.gen(function* () {
  const transaction = transactional(yield* SqlClient.SqlClient)
  const config = yield* AppConfig
  const resources = yield* ResourcesRepo
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const transitions = yield* TransitionsRepo
  const economic = yield* EconomicEventsRepo
  // Refreshing reads the window and writes the derived rows; one at a time keeps a concurrent
  // probe and settlement from interleaving their read-modify-write of the same resource.
  const lock = yield* Effect.makeSemaphore(1)

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
   * Recomputes one resource's metrics row and standing from its window and stores a transition
   * if it moved. The record supplies the catalog's payment options; status and level are read afresh.
   */
  const refresh = (record: ResourceRecord) =>
    Effect.gen(function* () {
      const id = record.resource.id
      const stored = yield* standingOf(id)
      if (Option.isNone(stored)) return null
      const nowMs = yield* Clock.currentTimeMillis
      const sinceMs = nowMs - windowMs(config.verification)
      const payTos = [...new Set(record.paymentOptions.map((o) => o.payTo))]
      const window = yield* observations.window(id, sinceMs)
      const payments = yield* economic.summary(id, payTos, sinceMs)
      const stats = summarizeWindow(window, payments, record.paymentOptions)
      yield* metrics.upsert(
        snapshotFrom(id, stats, stored.value.snapshot, payments.everSucceeded),
        new Date(nowMs).toISOString()
      )
      const next = deriveStanding(stats, payments.everSucceeded, nowMs, config.verification, stored.value.operatorQuarantine)
      yield* moveTo(id, stored.value, next, nowMs)
      return next
    })

  const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(transaction(effect))

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

    /** Stores the observation of `record`, then brings its metrics and status up to date. */
    recordObservation: (record: ResourceRecord, observation: RecordedObservation) =>
      serialized(Effect.zipRight(observations.insert(observation), refresh(record))).pipe(
        Effect.withSpan("EvidenceRecorder.recordObservation")
      ),

    /**
     * Stores a reported payment outcome, `pending` until the ledger confirms it when it can be
     * checked (see confirmation.ts), and re-derives the resources it is about: the records the
     * caller already holds (the receipt's service, the settled payee's listed resources).
     */
    recordEconomic: (event: EconomicEvent, about: ReadonlyArray<ResourceRecord>) =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
        serialized(
          Effect.zipRight(
            economic.insert(sortableId("eco", nowMs), event, initialResolution(event, nowMs), nowMs),
            Effect.forEach(about, refresh, { discard: true })
          )
        )
      ).pipe(Effect.withSpan("EvidenceRecorder.recordEconomic")),

    /** Stores what the ledger showed for a pending payment and re-derives the resources it is about. */
    resolveEconomic: (event: PendingEvent, resolution: EventResolution) =>
      Effect.gen(function* () {
        const about =
          event.resourceId !== null
            ? Option.toArray(yield* resources.get(event.resourceId))
            : event.payTo !== null
              ? yield* resources.byPayTo(event.payTo)
              : []
        const nowMs = yield* Clock.currentTimeMillis
        yield* serialized(
          Effect.zipRight(
            economic.resolve(event.id, resolution, nowMs),
            resolution.state === "pending" ? Effect.void : Effect.forEach(about, refresh, { discard: true })
          )
        )
      }).pipe(Effect.withSpan("EvidenceRecorder.resolveEconomic"))
  }
})

/** The write side of evidence: observations and economic events in, metrics rows, statuses and transitions out. */
export class EvidenceRecorder extends Context.Tag("sextant/EvidenceRecorder")<
  EvidenceRecorder,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(EvidenceRecorder, make)
}
