import { Effect } from "effect"
import type { ResourceMetrics } from "../domain/metrics.js"
import type { StatusTransition } from "../domain/observations.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { EvidenceReader } from "./EvidenceReader.js"

/** How many transitions a resource view shows. */
export const RECENT_TRANSITIONS = 20

/** Current metrics and the newest status transitions of one resource, for `GET /v1/resources/{id}`. */
export const resourceVerification = (
  resourceId: string,
  transitionLimit = RECENT_TRANSITIONS
): Effect.Effect<
  { readonly metrics: ResourceMetrics; readonly transitions: ReadonlyArray<StatusTransition> },
  never,
  EvidenceReader | TransitionsRepo
> =>
  Effect.gen(function* () {
    const evidence = yield* (yield* EvidenceReader).forResource(resourceId)
    const transitions = yield* (yield* TransitionsRepo).recent(resourceId, transitionLimit).pipe(Effect.orDie)
    return { metrics: evidence.metrics, transitions }
  })
