import { Context, Effect, Layer } from "effect"
import type { InvalidRequest, NotFound, RateLimited } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import type { McpTool } from "../domain/mcp.js"
import type { ProbeResult } from "../domain/observations.js"
import type { HttpMethod } from "../domain/resources.js"
import type { OutboundTargetRefused } from "../outbound/outboundGuard.js"
import type { ListingChange } from "../store/listingChanges.js"
import type { ProbeLane } from "../store/ProbeScheduleRepo.js"
import type { Observed } from "./observe.js"
import { makeProbeIntake } from "./probeIntake.js"
import { makeProbeRecording } from "./probeRecording.js"
import { makeProbeScheduling } from "./probeScheduling.js"
import { makePrune } from "./pruneEvidence.js"

/** What one scheduled pass over the catalog did. */
export interface CycleReport {
  readonly startedAt: string
  readonly durationMs: number
  readonly probed: number
  readonly healthy: number
  /** Probes whose result could not be recorded (a store failure); the cycle went on without them. */
  readonly unrecorded: number
  readonly pruned: number
  /** Unlisted resources `/v1/validate` created and nobody validated within `verification.unlistedRetentionHours`, deleted. */
  readonly prunedUnlisted: number
  /** Untrusted entries unhealthy for `ingestion.retireAfterHours`, deleted. */
  readonly retired: number
}

/**
 * Probes: what callers hand in (intake: probeIntake.ts, with validation's share in
 * probeValidation.ts), the catalog on its schedule (probeScheduling.ts) and retention
 * (pruneEvidence.ts). Both sides probe and record through probeRecording.ts.
 */
export interface ProberShape {
  /**
   * Ingestion's first step for a URL the catalog does not list (registration): probed once under
   * its future id, nothing stored; a refused target fails before any traffic.
   */
  readonly observeNewUrl: (
    url: URL,
    method: HttpMethod,
    mcp?: McpTool
  ) => Effect.Effect<Observed, OutboundTargetRefused>
  /**
   * Ingestion's second step, if the caller keeps the URL: the row for it from what its probe saw
   * (listed or not, from `source`), then the observation recorded against it.
   */
  readonly adopt: (
    url: URL,
    method: HttpMethod,
    observed: Observed,
    source: string,
    listed: boolean,
    change: ListingChange,
    mcp?: McpTool
  ) => Effect.Effect<ProbeResult>
  /** Probes a catalog resource now, as the schedule does, and records the observation (`sextant probe <id>`). */
  readonly probeResource: (resourceId: ResourceId) => Effect.Effect<ProbeResult, NotFound>
  /**
   * A caller's probe of a catalog resource (`/v1/validate {resourceId}`) with its catalog method,
   * always recorded; 429 when callers would add more than `probes.validationsPerInterval`
   * observations per probe interval beside the schedule's, or while another validation of it runs.
   */
  readonly validateResource: (
    resourceId: ResourceId,
    method?: HttpMethod
  ) => Effect.Effect<ProbeResult, NotFound | InvalidRequest | RateLimited>
  /**
   * Probes any URL (`/v1/validate`): a catalog URL is probed as that resource (as
   * `validateResource`); an unknown one becomes an unlisted resource (source "validate"). Fails
   * with OutboundTargetRefused for a URL the outbound guard forbids, before any row exists.
   */
  readonly probeUrl: (
    rawUrl: string,
    method?: HttpMethod
  ) => Effect.Effect<ProbeResult, OutboundTargetRefused | InvalidRequest | RateLimited>
  /** Applies retention: old observations and rollups, stale unlisted resources and retired entries deleted, in small statements. */
  readonly prune: Effect.Effect<Pick<CycleReport, "pruned" | "prunedUnlisted" | "retired">>
  /**
   * Gives every probe target a due time (a new one is due at once) and forgets resources that
   * stopped being targets; the scheduler runs it at start and once per interval, a page at a time.
   */
  readonly syncSchedule: Effect.Effect<{ readonly added: number; readonly removed: number }>
  /**
   * Claims up to `limit` due resources of `lane` as `owner`, probes them (at most the lane's
   * concurrency at once) and sets each one's next due time in the probe's own batch transaction;
   * an unhealthy untrusted entry's backs off. Answers how many were claimed. Interrupted, it
   * releases the claims it did not probe.
   */
  readonly runDue: (owner: string, limit: number, lane?: ProbeLane) => Effect.Effect<number>
  /**
   * One pass over the whole catalog now (`sextant probe`), at most `probes.concurrency` probes at
   * once, each bounded by `probes.timeoutMs`; then retention is applied (see `prune`).
   */
  readonly runCycle: Effect.Effect<CycleReport>
}

export class Prober extends Context.Tag("sextant/Prober")<Prober, ProberShape>() {
  static readonly Live = Layer.effect(
    Prober,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const recording = yield* makeProbeRecording
  const intake = yield* makeProbeIntake(recording)
  const prune = yield* makePrune
  const scheduling = yield* makeProbeScheduling(recording, prune)
  return { ...intake, prune, ...scheduling } satisfies ProberShape
})
