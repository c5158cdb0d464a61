import { probeMayList } from "../domain/resources.js"
import type { ListingState, ListingStep } from "../store/ResourceListingRepo.js"

/** What the listing rule needs of one probe. */
export interface ProbeFact {
  readonly healthy: boolean
  readonly atMs: number
}

const HOUR_MS = 3_600_000

/**
 * The listing after a probe (docs/decisions.md, Listing and freshness). No I/O.
 * - A healthy probe clears the unhealthy run and lists a resource held only for want of one:
 *   an import or extension waiting for its first healthy probe, or one delisted as unhealthy.
 *   A resource an operator, its source or `/v1/validate` unlisted stays unlisted.
 * - An unhealthy probe starts or extends the run; a listed resource whose run has lasted
 *   `delistAfterHours` leaves discovery (hold "unhealthy"), kept with its history.
 */
export const listingAfterProbe = (state: ListingState, probe: ProbeFact, delistAfterHours: number): ListingStep => {
  if (probe.healthy) {
    if (state.listed || !probeMayList(state.hold)) return { unhealthySinceMs: null, change: null }
    return {
      unhealthySinceMs: null,
      change: {
        listed: true,
        hold: null,
        reason:
          state.hold === "unhealthy"
            ? "healthy again: answered a valid 402 for this deployment's network and asset"
            : "first healthy probe: answered a valid 402 for this deployment's network and asset"
      }
    }
  }
  const since = state.unhealthySinceMs ?? probe.atMs
  if (!state.listed || probe.atMs - since < delistAfterHours * HOUR_MS) return { unhealthySinceMs: since, change: null }
  return {
    unhealthySinceMs: since,
    change: {
      listed: false,
      hold: "unhealthy",
      reason: `probes unhealthy for ${delistAfterHours} h or more (since ${new Date(since).toISOString()}); listed again after a healthy probe`
    }
  }
}
