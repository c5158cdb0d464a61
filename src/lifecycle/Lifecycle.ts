import { Context, Duration, Effect, type Fiber, Layer, Option, Ref, Stream, SubscriptionRef } from "effect"

/**
 * Where the process stands between start and exit, for a shutdown that loses nothing: requests
 * and settles in flight are counted, and once `drain` starts readiness answers 503 and new
 * requests are turned away while the counted work finishes.
 */
export interface LifecycleShape {
  /** True once a shutdown has begun: readiness answers 503, new requests are turned away. */
  readonly draining: Effect.Effect<boolean>
  /** Requests and settles currently counted. */
  readonly inFlight: Effect.Effect<number>
  /** Counts `self` as in flight for as long as it runs, however it ends (a request). */
  readonly track: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Forks `self` as a daemon that outlives its caller (a settle's forwarding), counted until it ends. */
  readonly forkTracked: <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R>
  /**
   * Stops taking new work and waits up to `grace` for the work in flight: true when everything
   * finished, false when the grace ran out first (the caller then exits as a crash would).
   */
  readonly drain: (grace: Duration.DurationInput) => Effect.Effect<boolean>
}

export class Lifecycle extends Context.Tag("sextant/Lifecycle")<Lifecycle, LifecycleShape>() {
  static readonly Live = Layer.effect(
    Lifecycle,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const inFlight = yield* SubscriptionRef.make(0)
  const draining = yield* Ref.make(false)

  const enter = SubscriptionRef.update(inFlight, (n) => n + 1)
  const leave = SubscriptionRef.update(inFlight, (n) => n - 1)

  const track = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      enter,
      () => self,
      () => leave
    )

  // Counted from before the fork, so no moment exists in which a drain could see it as finished before it started.
  const forkTracked = <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Effect.uninterruptible(
      Effect.zipRight(enter, Effect.forkDaemon(Effect.ensuring(Effect.interruptible(self), leave)))
    )

  /** Resolves when nothing is in flight (at once if nothing is). */
  const idle = inFlight.changes.pipe(
    Stream.filter((n) => n === 0),
    Stream.runHead,
    Effect.asVoid
  )

  const drain = (grace: Duration.DurationInput) =>
    Effect.gen(function* () {
      yield* Ref.set(draining, true)
      const pending = yield* SubscriptionRef.get(inFlight)
      yield* Effect.logInfo(
        `shutting down: waiting up to ${Duration.format(grace)} for ${pending} request(s) and settle(s) in flight`
      )
      // Interruptible on purpose: a drain runs as a finalizer (uninterruptible), where the timeout
      // could not stop the wait and would only return once everything finished anyway.
      const finished = yield* Effect.timeout(Effect.interruptible(idle), grace).pipe(
        Effect.option,
        Effect.map(Option.isSome)
      )
      const left = yield* SubscriptionRef.get(inFlight)
      yield* finished
        ? Effect.logInfo("shutting down: nothing left in flight")
        : Effect.logWarning(
            `shutting down: the grace ran out with ${left} request(s) or settle(s) in flight; exiting as a crash would`
          )
      return finished
    })

  return {
    draining: Ref.get(draining),
    inFlight: SubscriptionRef.get(inFlight),
    track,
    forkTracked,
    drain
  } satisfies LifecycleShape
})
