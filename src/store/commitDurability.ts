import type { SqlClient } from "@effect/sql"
import { Effect, FiberRef } from "effect"
import { transactional } from "./repository.js"

/**
 * How far a SQLite commit is made durable before it returns.
 * - "power-loss" (the default): fsynced (`synchronous = FULL`), so it survives the machine losing
 *   power. What every commit gets unless its caller says otherwise.
 * - "process-crash": written to the WAL but not fsynced (`synchronous = NORMAL` for that one
 *   transaction). It survives the process dying (the OS holds the write), not a power loss. The
 *   next fsynced commit makes it durable too, since both are in the one WAL file.
 * Read when a transaction takes the writer (`sqliteClient.ts`); Postgres and `:memory:` ignore it.
 */
export type CommitDurability = "power-loss" | "process-crash"

export const commitDurability = FiberRef.unsafeMake<CommitDurability>("power-loss")

/**
 * Runs `effect` with its transactions committed durable against a process crash only. Only for
 * writes a power loss may take back because something else recovers them (docs/decisions.md,
 * Settlement pipeline: the outcome of a settle, which the reconciler recovers from the ledger).
 */
export const durableAgainstProcessCrash = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.locally(effect, commitDurability, "process-crash")

/**
 * A transaction of `sql` committed durable against a process crash only, on either store: on
 * SQLite through `commitDurability` above, on Postgres with `SET LOCAL synchronous_commit = off`
 * (the commit returns before its WAL record is flushed; Postgres itself stays consistent). For
 * probe batches, which the next probes replace (docs/decisions.md, Probe batches commit without
 * an fsync).
 */
export const processCrashTransaction =
  (sql: SqlClient.SqlClient) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    durableAgainstProcessCrash(
      transactional(sql)(
        Effect.zipRight(
          sql.onDialectOrElse({ pg: () => Effect.orDie(sql`SET LOCAL synchronous_commit TO OFF`), orElse: () => Effect.void }),
          effect
        )
      )
    )
