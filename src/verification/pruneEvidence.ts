import { Clock, Effect } from "effect"
import { AppConfig } from "../config.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { letIoIn } from "./letIoIn.js"

/**
 * Rows deleted per statement when pruning. bun:sqlite blocks the event loop while a statement
 * runs, and every request waits that long: a small batch keeps each statement to a few ms
 * (docs/performance.md).
 */
const PRUNE_BATCH = 200
/** Resources whose old hourly rollups one pruning statement deletes (a few hours each at most, once the backlog is gone). */
const PRUNE_RESOURCES = 100

/**
 * Retention, in statements of PRUNE_BATCH rows with the event loop let in between them, so a
 * backlog never stalls the service: raw observations past `rawRetentionHours`, hourly rollups
 * past `retentionDays`. Each statement commits durable against a process crash only: a delete a
 * power cut takes back is made again by the next pass, and an fsync per statement would block
 * the loop as long as the delete.
 */
export const makePrune = Effect.gen(function* () {
  const config = yield* AppConfig
  const observations = yield* ObservationsRepo
  const listings = yield* ResourceListingRepo
  return commitWithoutFlush(
    Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const inBatches = (step: Effect.Effect<number>) =>
        Effect.iterate(
          { total: 0, last: PRUNE_BATCH },
          {
            while: (s) => s.last === PRUNE_BATCH,
            body: (s) => Effect.map(Effect.zipLeft(step, letIoIn), (n) => ({ total: s.total + n, last: n }))
          }
        ).pipe(Effect.map((s) => s.total))
      const pruned = yield* inBatches(
        observations.pruneRaw(nowMs - config.probes.rawRetentionHours * 3_600_000, PRUNE_BATCH)
      )
      const rollupsBefore = nowMs - config.probes.retentionDays * 86_400_000
      yield* Effect.iterate(
        { next: "" as string | null },
        {
          while: (s) => s.next !== null,
          body: (s) =>
            Effect.zipLeft(observations.pruneRollups(rollupsBefore, s.next!, PRUNE_RESOURCES, PRUNE_BATCH), letIoIn)
        }
      )
      // Unlisted resources `/v1/validate` created that nobody validated within unlistedRetentionHours go too,
      // and so do untrusted entries unhealthy for retireAfterHours.
      const prunedUnlisted = yield* listings.pruneUnlisted(
        nowMs - config.verification.unlistedRetentionHours * 3_600_000
      )
      const retired = yield* listings.retireUnhealthy(nowMs - config.ingestion.retireAfterHours * 3_600_000)
      return { pruned, prunedUnlisted, retired }
    })
  )
})
