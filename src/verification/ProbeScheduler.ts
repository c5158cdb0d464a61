import { Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig, type ProbesConfig } from "../config.js"
import { Prober } from "./Prober.js"

/**
 * When cycles run: the next one starts `intervalSeconds` after the previous one ended, plus a
 * random share of up to `jitter` of the interval so that several instances do not probe in step.
 * Counting from the end means a slow cycle is never overlapped by the next.
 */
export const cycleSchedule = (probes: ProbesConfig) =>
  Schedule.spaced(Duration.seconds(probes.intervalSeconds)).pipe(
    Schedule.jitteredWith({ min: 1, max: 1 + probes.jitter })
  )

/**
 * Probes the whole catalog at start-up and then on `cycleSchedule`, in a fiber owned by the
 * layer's scope: closing the scope interrupts the cycle in flight (aborting its requests). A
 * failed cycle is logged and the schedule goes on.
 */
export const ProbeSchedulerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const prober = yield* Prober
    const { probes } = yield* AppConfig
    const cycle = prober.runCycle.pipe(
      Effect.tap((report) => Effect.logDebug("probe cycle done", report)),
      Effect.catchAllCause((cause) => Effect.logError("probe cycle failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(cycle, cycleSchedule(probes)))
  })
)
