import { Clock, Effect } from "effect"
import { AppConfig } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import { type ProbeLane, ProbeScheduleRepo } from "../store/ProbeScheduleRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { letIoIn } from "./letIoIn.js"
import type { CycleReport, ProberShape } from "./Prober.js"
import type { ProbeRecording } from "./probeRecording.js"
import { backoffIntervals, nextDue } from "./probeSlots.js"

/**
 * Probe targets the schedule's sync compares with its rows at a time, with the event loop let in
 * between pages: the whole catalog at once held every request (docs/performance.md).
 */
const SYNC_PAGE = 1000

type Scheduling = Pick<ProberShape, "syncSchedule" | "runDue" | "runCycle">

/** The prober's scheduled side: what the schedule claims is due, the schedule's sync, a whole pass. */
export const makeProbeScheduling = (recording: ProbeRecording, prune: ProberShape["prune"]) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const listings = yield* ResourceListingRepo
    const reads = yield* ResourceReadsRepo
    const schedule = yield* ProbeScheduleRepo
    const intervalMs = config.probes.intervalSeconds * 1000

    /** Requests in flight at once per lane: strangers' entries get their own, smaller share. */
    const concurrencyOf = (lane: ProbeLane) =>
      lane === "trusted" ? config.probes.concurrency : config.ingestion.concurrency

    const syncSchedule = Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const total = { added: 0, removed: 0 }
      for (let afterId: string | null = ""; afterId !== null; ) {
        const ids: ReadonlyArray<{ readonly id: ResourceId; readonly lane: ProbeLane }> =
          yield* listings.probeTargetIds(afterId, SYNC_PAGE)
        const upTo = ids.length === SYNC_PAGE ? ids[ids.length - 1]!.id : null
        const page = yield* schedule.sync(ids, nowMs, afterId, upTo)
        total.added += page.added
        total.removed += page.removed
        afterId = upTo
        if (afterId !== null) yield* letIoIn
      }
      return total
    })

    // Each claimed resource's next due time (its next slot, `nextDue`; an unhealthy untrusted
    // entry's backs off, `backoffIntervals`) is set in the probe's own batch transaction.
    const runDue = (owner: string, limit: number, lane: ProbeLane = "trusted") =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        const claims = yield* schedule.claim(owner, nowMs, limit, config.probes.leaseSeconds * 1000, lane)
        if (claims.length === 0) return 0
        const ids = claims.map((c) => c.resourceId)
        const records = new Map((yield* reads.getMany(ids)).map((r) => [r.resource.id, r] as const))
        const unhealthy = lane === "open" ? yield* listings.unhealthySince(ids) : new Map<string, number>()
        const next = (resourceId: ResourceId) =>
          nextDue(
            resourceId,
            nowMs,
            intervalMs *
              backoffIntervals(unhealthy.get(resourceId), nowMs, intervalMs, config.ingestion.maxBackoffIntervals)
          )
        // A claim whose resource is gone is completed without a probe.
        const gone = claims
          .filter((c) => !records.has(c.resourceId))
          .map((c) => ({ resourceId: c.resourceId, nextDueMs: next(c.resourceId) }))
        yield* Effect.zipRight(
          gone.length === 0 ? Effect.void : schedule.complete(owner, gone),
          recording.probeAll(
            claims.flatMap((c) => {
              const record = records.get(c.resourceId)
              return record === undefined ? [] : [{ record, claim: { owner, nextDueMs: next(c.resourceId) } }]
            }),
            concurrencyOf(lane)
          )
        ).pipe(
          // Stopping mid-batch: what was not probed is due at once for any instance still running.
          Effect.onInterrupt(() =>
            Effect.ignore(
              schedule.release(
                claims.map((c) => c.resourceId),
                owner
              )
            )
          )
        )
        return claims.length
      })

    const runCycle = Effect.gen(function* () {
      const startMs = yield* Clock.currentTimeMillis
      const records = yield* reads.probeTargets()
      const outcomes = yield* recording.probeAll(records.map((record) => ({ record })))
      const { pruned, prunedUnlisted, retired } = yield* prune
      const endMs = yield* Clock.currentTimeMillis
      return {
        startedAt: new Date(startMs).toISOString(),
        durationMs: endMs - startMs,
        probed: records.length,
        healthy: outcomes.filter((o) => o === "healthy").length,
        unrecorded: outcomes.filter((o) => o === null).length,
        pruned,
        prunedUnlisted,
        retired
      } satisfies CycleReport
    }).pipe(Effect.withSpan("Prober.runCycle"))

    return { syncSchedule, runDue, runCycle } satisfies Scheduling
  })
