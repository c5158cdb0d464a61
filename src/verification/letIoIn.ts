import { Effect } from "effect"

/**
 * Lets the event loop serve what is waiting (requests, answers of other probes) before going on.
 * `Effect.yieldNow` does not: Effect resumes the fiber in a microtask, which runs before any I/O.
 * Real time, not the Clock, so a TestClock never holds it.
 */
export const letIoIn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
