import { Effect, FiberRef } from "effect"

/** False while a fiber runs under `commitWithoutFlush`: read where a commit is made, never set elsewhere. */
export const commitFlushed = FiberRef.unsafeMake<boolean>(true)

/**
 * Runs `effect` with its commits returning before they reach the disk: each survives this process
 * dying (a SIGKILL, an OOM), not the machine or the database server failing. Every other commit is
 * flushed. Only for writes something else recovers when they are lost (docs/decisions.md: a settle's
 * outcome, which the reconciler recovers from the ledger; probe batches, which the next probes
 * replace; retention deletes, made again by the next pass; rate-limit counters).
 *
 * - SQLite: every commit inside, a transaction or a lone statement, runs at `synchronous = NORMAL`
 *   (written to the WAL, not fsynced; the next fsynced commit makes it durable too, as both are in
 *   the one WAL file). Set on the writer before BEGIN (`sqliteClient.ts`); `:memory:` ignores it.
 * - Postgres: every transaction run through `StoreTransactions` inside starts with
 *   `SET LOCAL synchronous_commit = off` (the commit returns before its WAL record is flushed;
 *   Postgres itself stays consistent). A lone statement outside a transaction commits flushed.
 */
export const commitWithoutFlush = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.locally(effect, commitFlushed, false)
