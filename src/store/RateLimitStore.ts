import type { RateLimiter } from "@effect/experimental"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Schema } from "effect"
import { commitWithoutFlush } from "./commitDurability.js"
import { decodeRows, repository, SqlNumber } from "./repository.js"

/**
 * `@effect/experimental`'s RateLimiterStore on this service's SQL store (SQLite or Postgres), with
 * `prune` for expired counters. A failing store is a defect, as at every repository (503).
 */
export interface RateLimitStoreShape extends Context.Tag.Service<RateLimiter.RateLimiterStore> {
  /** Deletes the counters whose window ended: a client not seen since holds no row. */
  readonly prune: (nowMs: number) => Effect.Effect<void>
}

export class RateLimitStore extends Context.Tag("sextant/RateLimitStore")<RateLimitStore, RateLimitStoreShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(RateLimitStore, make))
}

const CounterRow = Schema.Struct({ count: SqlNumber, expires_at_ms: SqlNumber })
const decodeCounter = decodeRows(CounterRow)

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const repo = repository("RateLimitStore", {
    /**
     * Effect's fixed-window counter (`@effect/experimental` RateLimiter; the same rule as its Redis
     * store) in one statement, so concurrent requests, from any instance on the store, each see
     * the count after their own: a window that has ended starts again; otherwise the count grows,
     * and the window grows by `refill` per token taken while the count stays within the limit. A
     * refused request still adds to the count (it is reported above the limit) but never
     * lengthens the window, so refusals end when it does.
     */
    take: (key: string, tokens: number, refillMs: number, limit: number, nowMs: number) =>
      sql`INSERT INTO rate_limits (key, count, expires_at_ms) VALUES (${key}, ${tokens}, ${nowMs + refillMs * tokens})
        ON CONFLICT (key) DO UPDATE SET
          count = CASE WHEN rate_limits.expires_at_ms <= ${nowMs} THEN ${tokens} ELSE rate_limits.count + ${tokens} END,
          expires_at_ms = CASE
            WHEN rate_limits.expires_at_ms <= ${nowMs} THEN ${nowMs + refillMs * tokens}
            WHEN rate_limits.count + ${tokens} > ${limit} THEN rate_limits.expires_at_ms
            ELSE rate_limits.expires_at_ms + ${refillMs * tokens}
          END
        RETURNING count, expires_at_ms`.pipe(
        Effect.flatMap(decodeCounter),
        Effect.map(([row]) =>
          row === undefined
            ? ([tokens, refillMs * tokens] as const)
            : ([row.count, Math.max(0, row.expires_at_ms - nowMs)] as const)
        ),
        // A counter a power loss takes back only lets a client a few more requests in one window:
        // not worth an fsync on every limited request (a settle's would otherwise be its third).
        commitWithoutFlush
      ),
    prune: (nowMs: number) => sql`DELETE FROM rate_limits WHERE expires_at_ms <= ${nowMs}`.pipe(Effect.asVoid)
  })

  const store: Context.Tag.Service<RateLimiter.RateLimiterStore> = {
    fixedWindow: (options) =>
      Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
        repo.take(
          options.key,
          options.tokens,
          Duration.toMillis(options.refillRate),
          options.limit ?? Number.MAX_SAFE_INTEGER,
          nowMs
        )
      ),
    // Only the fixed window is used (src/limits/RateLimits.ts); a token bucket needs a read-modify-write this store does not do.
    tokenBucket: () => Effect.dieMessage("the SQL rate limit store implements the fixed-window algorithm only")
  }
  return { ...store, prune: repo.prune }
})
