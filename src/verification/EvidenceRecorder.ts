import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import type { EconomicEvent } from "../domain/evidence.js"
import type { ResourceRecord } from "../domain/resources.js"
import { EconomicEventsRepo } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { sortableId } from "../store/sortableId.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { snapshotFrom, windowMs } from "./metrics.js"
import { deriveStanding, type Standing } from "./status.js"
import { type RecordedObservation, summarizeWindow } from "./windowStats.js"

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const resources = yield* ResourcesRepo
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const transitions = yield* TransitionsRepo
  const economic = yield* EconomicEventsRepo
  // Refreshing reads the window and writes the derived rows; one at a time keeps a concurrent
  // probe and settlement from interleaving their read-modify-write of the same resource.
  const lock = yield* Effect.makeSemaphore(1)

  const moveTo = (record: ResourceRecord, next: Standing, nowMs: number) =>
    Effect.gen(function* () {
      const { status, verificationLevel } = record.resource
      if (status === next.status && verificationLevel === next.level) return
      yield* transitions.insert(sortableId("tr", nowMs), {
        resourceId: record.resource.id,
        from: status,
        to: next.status,
        fromLevel: verificationLevel,
        toLevel: next.level,
        reason: next.reason,
        at: new Date(nowMs).toISOString()
      })
      yield* resources.setStatus(record.resource.id, next.status, next.level)
    })

  /**
   * Recomputes one resource's metrics row and standing from its window and stores a transition
   * if it moved. Reads the resource afresh: its status may have changed since the caller loaded it.
   */
  const refresh = (resourceId: string) =>
    Effect.gen(function* () {
      const found = yield* resources.get(resourceId)
      if (Option.isNone(found)) return null
      const record = found.value
      const nowMs = yield* Clock.currentTimeMillis
      const sinceMs = nowMs - windowMs(config.verification)
      const payTos = [...new Set(record.paymentOptions.map((o) => o.payTo))]
      const window = yield* observations.window(resourceId, sinceMs)
      const outcomes = yield* economic.window(resourceId, payTos, sinceMs)
      const transactionVerified = yield* economic.anySuccess(resourceId, payTos)
      const stats = summarizeWindow(window, outcomes, record.paymentOptions)
      const previous = yield* metrics.get(resourceId)
      yield* metrics.upsert(snapshotFrom(resourceId, stats, previous, transactionVerified), new Date(nowMs).toISOString())
      const next = deriveStanding(stats, transactionVerified, nowMs, config.verification)
      yield* moveTo(record, next, nowMs)
      return next
    })

  const serialized = <A, E, R>(effect: Effect.Effect<A, E, R>) => lock.withPermits(1)(sql.withTransaction(effect))

  return {
    /** DESIGN: VALIDATING while the first probe of a DISCOVERED resource is in flight. */
    beginProbe: (resourceId: string) =>
      serialized(
        Effect.gen(function* () {
          const found = yield* resources.get(resourceId)
          if (Option.isNone(found) || found.value.resource.status !== "DISCOVERED") return
          const nowMs = yield* Clock.currentTimeMillis
          yield* moveTo(found.value, { status: "VALIDATING", level: 0, reason: "first probe in flight" }, nowMs)
        })
      ),

    /** Stores the observation, then brings the resource's metrics and status up to date. */
    recordObservation: (observation: RecordedObservation) =>
      serialized(Effect.zipRight(observations.insert(observation), refresh(observation.resourceId))),

    /** Stores a payment outcome and re-derives every resource it is about. */
    recordEconomic: (event: EconomicEvent) =>
      Effect.gen(function* () {
        const affected =
          event.resourceId !== null
            ? [event.resourceId]
            : event.payTo !== null
              ? (yield* resources.byPayTo(event.payTo)).map((r) => r.resource.id)
              : []
        const nowMs = yield* Clock.currentTimeMillis
        yield* serialized(
          Effect.zipRight(
            economic.insert(sortableId("eco", nowMs), event),
            Effect.forEach(affected, refresh, { discard: true })
          )
        )
      })
  }
})

/** The write side of evidence: observations and economic events in, metrics rows, statuses and transitions out. */
export class EvidenceRecorder extends Context.Tag("sextant/EvidenceRecorder")<
  EvidenceRecorder,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(EvidenceRecorder, make)
}
