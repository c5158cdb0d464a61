import { RateLimiter } from "@effect/experimental"
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../config.js"
import { RateLimited } from "../domain/errors.js"
import { RateLimitStore } from "../store/RateLimitStore.js"
import type { LimitedGroup } from "./groups.js"

export interface RateLimitsShape {
  /**
   * Takes one request from `key`'s allowance in `group`: 429 RATE_LIMITED with the seconds until
   * the window ends when it is used up. A group whose limit is null is not counted.
   */
  readonly admit: (group: LimitedGroup, key: string) => Effect.Effect<void, RateLimited>
}

/** Request rate limits per principal and endpoint group (`limits`), counted in the store. */
export class RateLimits extends Context.Tag("sextant/RateLimits")<RateLimits, RateLimitsShape>() {
  static readonly Live = Layer.scoped(
    RateLimits,
    Effect.suspend(() => make)
  )
}

/** Expired counters are deleted this often; between runs they only take a row each. */
const PRUNE_EVERY = Duration.minutes(10)

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const store = yield* RateLimitStore
  const limiter = yield* RateLimiter.make.pipe(Effect.provideService(RateLimiter.RateLimiterStore, store))

  const admit = (group: LimitedGroup, key: string): Effect.Effect<void, RateLimited> => {
    const limit = config.limits[group]
    if (limit === null) return Effect.void
    return limiter
      .consume({
        algorithm: "fixed-window",
        onExceeded: "fail",
        key,
        limit: limit.requests,
        window: Duration.seconds(limit.windowSeconds)
      })
      .pipe(
        Effect.asVoid,
        Effect.catchAll((e) => {
          // The SQL store dies on failure (503 STORE_UNAVAILABLE at the HTTP layer); it never fails this way.
          if (!(e instanceof RateLimiter.RateLimitExceeded)) return Effect.die(e)
          const retryAfterSeconds = Math.max(1, Math.ceil(Duration.toSeconds(e.retryAfter)))
          return Effect.fail(
            new RateLimited({
              message: `at most ${limit.requests} requests per ${limit.windowSeconds} s to this endpoint; retry in ${retryAfterSeconds} s`,
              retryAfterSeconds
            })
          )
        })
      )
  }

  yield* Clock.currentTimeMillis.pipe(
    Effect.flatMap(store.prune),
    Effect.catchAllCause((cause) => Effect.logWarning("pruning expired rate-limit counters failed", cause)),
    Effect.repeat(Schedule.spaced(PRUNE_EVERY)),
    Effect.forkScoped
  )

  return { admit } satisfies RateLimitsShape
})
