import { randomUUID } from "node:crypto"
import { Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../config.js"
import { logFailure } from "../lifecycle/interruption.js"
import type { ProbeLane } from "../store/ProbeScheduleRepo.js"
import { Prober } from "./Prober.js"

/** How often an idle instance looks for due resources. */
export const TICK = Duration.seconds(1)

/**
 * Probes each resource at its own due time (probeSlots.ts), so a catalog's probes spread over the
 * interval. Two loops, one per lane (docs/trust.md): trusted entries (`probes.concurrency`) and
 * untrusted ones (`ingestion.concurrency`), so strangers' targets, however many and however dead,
 * never delay the entries settles are judged on. Each loop claims due resources of its lane under
 * a lease (`probes.leaseSeconds`) as this instance, probes them, and claims again at once while a
 * claim comes back full; otherwise it waits a tick.
 * Instances on one Postgres claim disjoint sets, and one that dies gives its claims back when
 * their lease runs out. Once per interval (first at start) the schedule is synced with the catalog
 * and retention applied. Both run in fibers owned by the layer's scope: closing it interrupts a
 * batch in flight, whose unprobed claims are released. Failures are logged and the loop goes on.
 */
export const ProbeSchedulerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const prober = yield* Prober
    const { probes, ingestion } = yield* AppConfig
    const owner = `instance-${randomUUID()}`
    const housekeeping = Effect.zipRight(prober.syncSchedule, prober.prune).pipe(
      Effect.catchAllCause(logFailure("probe schedule upkeep failed"))
    )
    const lane = (name: ProbeLane, concurrency: number) => {
      const limit = concurrency * 4
      return prober.runDue(owner, limit, name).pipe(
        Effect.catchAllCause((cause) => Effect.as(logFailure(`probing due resources (${name} lane) failed`)(cause), 0)),
        Effect.flatMap((claimed) => (claimed === limit ? Effect.void : Effect.sleep(TICK))),
        Effect.forever
      )
    }
    const due = Effect.zipRight(
      Effect.forkScoped(lane("open", ingestion.concurrency)),
      lane("trusted", probes.concurrency)
    )
    yield* Effect.forkScoped(
      Effect.zipRight(
        housekeeping,
        Effect.zipRight(
          Effect.forkScoped(Effect.schedule(housekeeping, Schedule.spaced(Duration.seconds(probes.intervalSeconds)))),
          due
        )
      )
    )
  })
)
