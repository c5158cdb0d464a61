import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Database } from "bun:sqlite"
import { Effect, FiberRef, Layer, Scope } from "effect"
import { commitFlushed } from "./commitDurability.js"

/**
 * The SqlClient on SQLite. A file has two connections: the writer, which runs every transaction
 * and every statement that writes, one at a time, and a reader for SELECTs outside a transaction.
 * In WAL mode the reader sees the last commit and never waits for the writer, so a metrics read
 * does not queue behind a probe batch's transaction. `:memory:` is one database per connection,
 * so there the writer runs everything.
 */

/**
 * @effect/sql's SQLite compiler, but every parameter is written `+?` rather than `?`. SQLite marks
 * a statement for recompiling when a bare parameter it planned with (in a join's or a compound
 * select's WHERE, in a LIMIT) is bound again, and Bun binds every parameter on every run: the
 * settle's payee shortlist was compiled anew each time (177 µs; 9 µs as `+?`, same plan). Unary
 * `+` is a no-op on any value, adds no affinity or collation, and keeps the plan's index use.
 */
export const sqliteCompiler = Statement.makeCompiler({
  dialect: "sqlite",
  placeholder: () => "+?",
  onIdentifier: Statement.defaultEscape('"'),
  onRecordUpdate: () => ["", []],
  onCustom: () => ["", []]
})

const connectionOn = (db: Database): Connection => {
  const run = (sql: string, params: ReadonlyArray<unknown> = [], values = false) =>
    Effect.try({
      try: () => {
        const statement = db.query(sql)
        return (values ? statement.values(...(params as Array<never>)) : statement.all(...(params as Array<never>))) ?? []
      },
      catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
    })
  return {
    execute: (sql, params, transformRows) =>
      transformRows ? Effect.map(run(sql, params), (rows) => transformRows(rows as never)) : run(sql, params),
    executeRaw: (sql, params) => run(sql, params),
    executeValues: (sql, params) => run(sql, params, true) as never,
    executeUnprepared(sql, params, transformRows) {
      return this.execute(sql, params, transformRows)
    },
    executeStream: () => Effect.dieMessage("executeStream not implemented")
  } as Connection
}

/** Only a plain SELECT may go to the reader; anything else (PRAGMA, WITH ... INSERT, DML) writes or may. */
const isRead = (sql: string) => /^\s*SELECT\b/i.test(sql)

const open = (filename: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const db = new Database(filename, { readwrite: true, create: true })
      db.run("PRAGMA journal_mode = WAL;")
      // Both connections wait for a lock rather than fail (another process may share the file).
      db.run("PRAGMA busy_timeout = 5000;")
      return db
    }),
    (db) => Effect.sync(() => db.close())
  )

/**
 * When the fiber asked for commits without a flush (`commitWithoutFlush`, commitDurability.ts):
 * sets `synchronous = NORMAL` on `db`. Answers the effect that puts back the level it replaced
 * (nothing to do otherwise). SQLite refuses the change inside a transaction, so callers hold the
 * writer's permit across it, and put the level back before they give the permit back: no other
 * write ever runs at the lower level.
 */
const relaxIfAsked = (db: Database) =>
  Effect.flatMap(FiberRef.get(commitFlushed), (flushed) =>
    flushed
      ? Effect.succeed(Effect.void)
      : Effect.sync(() => {
          const { synchronous } = db.query("PRAGMA synchronous").get() as { synchronous: number }
          db.run("PRAGMA synchronous = NORMAL;")
          return Effect.sync(() => db.run(`PRAGMA synchronous = ${synchronous};`))
        })
  )

const make = (filename: string) =>
  Effect.gen(function* () {
    const writerDb = yield* open(filename)
    const writer = connectionOn(writerDb)
    const reader = filename === ":memory:" ? null : connectionOn(yield* open(filename))
    const semaphore = yield* Effect.makeSemaphore(1)
    // A write outside a transaction commits on its own, at the durability its fiber asked for.
    const exclusive = <A, E>(effect: Effect.Effect<A, E>) =>
      semaphore.withPermits(1)(Effect.acquireUseRelease(relaxIfAsked(writerDb), () => effect, (putBack) => putBack))
    // A plain SELECT goes to the reader (a file's); anything else to the writer, one at a time.
    const route = <A, E>(sql: string, run: (connection: Connection) => Effect.Effect<A, E>) =>
      reader !== null && isRead(sql) ? run(reader) : exclusive(run(writer))
    const routed: Connection = {
      execute: (sql, params, transformRows) => route(sql, (c) => c.execute(sql, params, transformRows)),
      executeRaw: (sql, params) => route(sql, (c) => c.executeRaw(sql, params)),
      executeValues: (sql, params) => route(sql, (c) => c.executeValues(sql, params)),
      executeUnprepared: (sql, params, transformRows) => route(sql, (c) => c.execute(sql, params, transformRows)),
      executeStream: () => Effect.dieMessage("executeStream not implemented")
    } as Connection
    // A transaction holds the writer (and its permit) from BEGIN to COMMIT, and commits at the
    // durability its fiber asked for.
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(semaphore.take(1)),
          Effect.tap(Effect.scope, (scope) =>
            Effect.zipRight(
              Scope.addFinalizer(scope, semaphore.release(1)),
              Effect.flatMap(relaxIfAsked(writerDb), (putBack) => Scope.addFinalizer(scope, putBack))
            )
          )
        ),
        writer
      )
    )
    return yield* SqlClient.make({
      acquirer: Effect.succeed(routed),
      compiler: sqliteCompiler,
      transactionAcquirer,
      spanAttributes: [["db.system.name", "sqlite"]]
    })
  })

/** The SqlClient of a SQLite file (with a reader connection beside the writer) or of `:memory:`. */
export const sqliteClientLayer = (filename: string): Layer.Layer<SqlClient.SqlClient> =>
  Layer.scoped(SqlClient.SqlClient, make(filename)).pipe(Layer.provide(Reactivity.layer))
