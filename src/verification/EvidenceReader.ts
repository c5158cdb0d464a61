import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import { type EconomicEvent, noEvidence, type ResourceEvidence } from "../domain/evidence.js"
import { MetricsRepo, type StoredStanding } from "../store/MetricsRepo.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"
import { currentMetrics } from "./metrics.js"

/**
 * Read side of verification, and the one door through which economic evidence enters.
 * The live layer reads each resource's status and its metrics row, kept current by EvidenceRecorder.
 */
export class EvidenceReader extends Context.Tag("sextant/EvidenceReader")<
  EvidenceReader,
  {
    /** Evidence of one resource; a resource never probed gets empty metrics and level 0. */
    readonly forResource: (resourceId: string) => Effect.Effect<ResourceEvidence>
    readonly forResources: (resourceIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ResourceEvidence>>
    /** Evidence of every resource whose payment options pay `payTo`; empty when no resource pays it. */
    readonly forPayTo: (payTo: string) => Effect.Effect<ReadonlyArray<ResourceEvidence>>
    /** Records a settlement or receipt outcome and re-derives the affected resources' status. */
    readonly recordEconomic: (event: EconomicEvent) => Effect.Effect<void>
  }
>() {
  /**
   * Reads the stored metrics row of each resource and applies only what depends on the time of
   * reading (confidence, window expiry): no observation history is scanned. A store failure is a
   * defect here, since callers (policy, routing, settlement) cannot decide anything without it.
   */
  static readonly Live = Layer.effect(
    EvidenceReader,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const metrics = yield* MetricsRepo
      const resources = yield* ResourcesRepo
      const recorder = yield* EvidenceRecorder

      const toEvidence = (stored: StoredStanding, nowMs: number): ResourceEvidence => ({
        resourceId: stored.resourceId,
        status: stored.status,
        verificationLevel: stored.level,
        metrics: currentMetrics(stored.resourceId, stored.snapshot, nowMs, config.verification),
        lastObservedAt: stored.snapshot?.lastObservedAt ?? null,
        validChallengeSeen: stored.snapshot?.validChallengeSeen ?? false,
        transactionVerified: stored.snapshot?.transactionVerified ?? false
      })

      const forResources = (resourceIds: ReadonlyArray<string>) =>
        Effect.gen(function* () {
          const nowMs = yield* Clock.currentTimeMillis
          const stored = yield* metrics.standings([...new Set(resourceIds)])
          return new Map(stored.map((s) => [s.resourceId, toEvidence(s, nowMs)] as const)) as ReadonlyMap<
            string,
            ResourceEvidence
          >
        }).pipe(Effect.orDie)

      return {
        forResource: (resourceId) =>
          forResources([resourceId]).pipe(Effect.map((found) => found.get(resourceId) ?? noEvidence(resourceId))),
        forResources,
        forPayTo: (payTo) =>
          resources.byPayTo(payTo).pipe(
            Effect.orDie,
            Effect.flatMap((records) => forResources(records.map((r) => r.resource.id))),
            Effect.map((found) => [...found.values()])
          ),
        recordEconomic: (event) => recorder.recordEconomic(event).pipe(Effect.orDie)
      }
    })
  )
}
