import type { SqlClient } from "@effect/sql"
import { Effect, FiberRef } from "effect"
import { transactional } from "./repository.js"

/**
 * Set for a transaction that may commit without waiting for the disk: read when the transaction
 * opens (sqliteClient.ts), so it has no effect on a transaction nested in a durable one.
 */
export const relaxedCommit: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/**
 * A transaction whose commit is atomic and survives a crash of the process, but not a power loss:
 * SQLite commits it with `synchronous = NORMAL` (in WAL mode the frames are written, not fsynced;
 * the next durable commit or checkpoint syncs them), Postgres with `synchronous_commit = off`.
 * For what can be lost without harm (probe observations, which the next probe replaces), never
 * for money: the settlement journal, budgets and receipts keep every commit fsynced.
 */
export const relaxedTransaction =
  (sql: SqlClient.SqlClient) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    transactional(sql)(
      Effect.zipRight(
        sql.onDialectOrElse({ pg: () => Effect.orDie(sql`SET LOCAL synchronous_commit TO OFF`), orElse: () => Effect.void }),
        effect
      )
    ).pipe(Effect.locally(relaxedCommit, true))
