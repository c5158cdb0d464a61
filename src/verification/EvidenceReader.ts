import { Context, type Effect } from "effect"
import type { EconomicEvent, ResourceEvidence } from "../domain/evidence.js"
import type { StatusTransition } from "../domain/observations.js"

/**
 * Read side of verification, and the one door through which economic evidence enters.
 * The live layer is built from the observation, metrics and transition tables.
 */
export class EvidenceReader extends Context.Tag("sextant/EvidenceReader")<
  EvidenceReader,
  {
    /** Evidence of one resource; a resource never probed gets empty metrics and level 0. */
    readonly forResource: (resourceId: string) => Effect.Effect<ResourceEvidence>
    readonly forResources: (resourceIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ResourceEvidence>>
    /** Evidence of every resource whose payment options pay `payTo`; empty when no resource pays it. */
    readonly forPayTo: (payTo: string) => Effect.Effect<ReadonlyArray<ResourceEvidence>>
    /** Newest-first status transitions of a resource (from, to, reason, time), at most `limit`. */
    readonly recentTransitions: (resourceId: string, limit: number) => Effect.Effect<ReadonlyArray<StatusTransition>>
    /** Records a settlement or receipt outcome and re-derives the affected resources' status. */
    readonly recordEconomic: (event: EconomicEvent) => Effect.Effect<void>
  }
>() {}
