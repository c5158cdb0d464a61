import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, FiberRef, Layer } from "effect"
import { CatalogChanges } from "./CatalogChanges.js"
import { commitFlushed } from "./commitDurability.js"
import { isSqlError } from "./repository.js"

/**
 * The one way this process opens a transaction on the store, so what a transaction changes of the
 * catalog reaches the read models only after it ends, and a commit honours `commitWithoutFlush` on
 * either database. A transaction opened on the SqlClient directly escapes both.
 */
export interface StoreTransactionsShape {
  /**
   * Runs `effect` in one transaction (a savepoint inside another): catalog changes announced in it
   * are delivered when the outermost one ends; a store failure is a defect, as at every repository.
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, Exclude<E, SqlError.SqlError>, R>
}

export class StoreTransactions extends Context.Tag("sextant/StoreTransactions")<
  StoreTransactions,
  StoreTransactionsShape
>() {}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* CatalogChanges
  // SQLite reads the same FiberRef when it takes the writer (sqliteClient.ts); Postgres is told per transaction.
  const pgWithoutFlush = Effect.flatMap(FiberRef.get(commitFlushed), (flushed) =>
    flushed
      ? Effect.void
      : sql.onDialectOrElse({
          pg: () => Effect.asVoid(sql`SET LOCAL synchronous_commit TO OFF`),
          orElse: () => Effect.void
        })
  )
  return StoreTransactions.of({
    transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      changes
        .heldUntilEnd(sql.withTransaction(Effect.zipRight(pgWithoutFlush, effect)))
        .pipe(Effect.catchIf(isSqlError, Effect.die)) as Effect.Effect<A, Exclude<E, SqlError.SqlError>, R>
  })
})

export const StoreTransactionsLive = Layer.effect(StoreTransactions, make)
