import { type Duration, Effect, Schedule, type Scope } from "effect"
import { logFailure } from "./interruption.js"

/**
 * Runs `pass` every `interval` in a fiber of the current scope (the serving process). A pass that
 * fails or dies is logged as `failure` and the next one runs on time: one bad pass must not stop
 * reconciliation, confirmation or the economic probes for the rest of the process's life.
 */
export const repeatedPass = <A, E, R>(
  pass: Effect.Effect<A, E, R>,
  interval: Duration.DurationInput,
  failure: string
): Effect.Effect<void, never, R | Scope.Scope> =>
  pass.pipe(
    Effect.catchAllCause(logFailure(failure)),
    Effect.repeat(Schedule.spaced(interval)),
    Effect.forkScoped,
    Effect.asVoid
  )
