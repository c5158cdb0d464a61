import { Database, type Statement as Prepared } from "bun:sqlite"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError, Statement } from "@effect/sql"
import type { Connection } from "@effect/sql/SqlConnection"
import { Effect, FiberRef, Layer, Scope, Stream } from "effect"
import { commitFlushed } from "./commitDurability.js"

/**
 * The SqlClient on SQLite: a deliberate fork of `make` in `@effect/sql-sqlite-bun` 0.50.2
 * (`src/SqliteClient.ts`), typed against `@effect/sql`'s `Connection` so a change of that
 * interface is a type error here. The library takes neither a compiler nor a second connection,
 * and keeps its connection inside `make`, so it cannot be wrapped. Followed as upstream has it:
 * statements through Bun's `db.query` (`all`, or `values` for `executeValues`), every error a
 * `SqlError`, `executeUnprepared` as `execute`, no streaming, one writer behind a semaphore of one
 * permit, and a `transactionAcquirer` that holds the permit from BEGIN to COMMIT. What differs:
 * - every parameter is written `+?` (the compiler below; decisions.md, "Settle overhead");
 * - a file gets a reader connection beside the writer: in WAL mode the reader sees the last commit
 *   and never waits for the writer, so a metrics read does not queue behind a probe batch's
 *   transaction (`readerStatement` says which statements go there). `:memory:` is one database
 *   per connection, so there the writer runs everything;
 * - a commit's flush follows the fiber's `commitDurability` (`relaxIfAsked`), and both connections
 *   wait for a lock (`busy_timeout`) rather than fail;
 * - left out, as nothing here uses them: the `SqliteClient` tag with `export` and
 *   `loadExtension`, name transforms, the `SafeIntegers` switch (integers always come back as
 *   numbers), and the `readonly`, `disableWAL` and span options (always read-write, WAL, and the
 *   one span attribute `db.system.name`).
 * Moving to a new upstream version means reading its `SqliteClient.ts` against this list.
 */

/**
 * @effect/sql's SQLite compiler, but every parameter is written `+?` rather than `?`. SQLite marks
 * a statement for recompiling when a bare parameter it planned with (in a join's or a compound
 * select's WHERE, in a LIMIT) is bound again, and Bun binds every parameter on every run, so the
 * settle's payee shortlist was compiled anew each time. Unary `+` is a no-op on any value, adds
 * no affinity or collation, and keeps the plan's index use.
 */
export const sqliteCompiler = Statement.makeCompiler({
  dialect: "sqlite",
  placeholder: () => "+?",
  onIdentifier: Statement.defaultEscape('"'),
  onRecordUpdate: () => ["", []],
  onCustom: () => ["", []]
})

/** Runs a statement: its rows as objects, or as arrays of values when `values` is set. */
type Run = (
  sql: string,
  params: ReadonlyArray<unknown>,
  values: boolean
) => Effect.Effect<ReadonlyArray<any>, SqlError.SqlError>

const rows = (prepare: () => Prepared, params: ReadonlyArray<unknown>, values: boolean) =>
  Effect.try({
    try: (): ReadonlyArray<any> => {
      const statement = prepare()
      return (values ? statement.values(...params) : statement.all(...params)) ?? []
    },
    catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to execute statement" })
  })

const connectionOver = (run: Run) => {
  const execute: Connection["execute"] = (sql, params, transformRows) =>
    transformRows ? Effect.map(run(sql, params, false), transformRows) : run(sql, params, false)
  return {
    execute,
    executeRaw: (sql, params) => run(sql, params, false),
    executeValues: (sql, params) => run(sql, params, true),
    executeUnprepared: execute,
    executeStream: () => Stream.dieMessage("executeStream not implemented")
  } satisfies Connection
}

const runOn =
  (db: Database): Run =>
  (sql, params, values) =>
    rows(() => db.query(sql), params, values)

/** Starts as a query does; a PRAGMA (which reads or sets its connection's own state) does not. */
const query = /^\s*(?:SELECT|WITH)\b/i

/**
 * `sql` prepared on the reader, when it may run there: a query that SQLite reports makes no change
 * to the file (`sqlite3_stmt_readonly`, which a `WITH ... INSERT` is not). Undefined otherwise, and
 * when the reader cannot prepare it: the writer then runs it and answers its errors, as it does for
 * every statement inside a transaction. `readonly` alone would not do: SQLite reports it for
 * PRAGMAs that set the connection, for BEGIN and for ATTACH. A statement that asks the connection
 * about itself (`last_insert_rowid()`, `changes()`) belongs in a transaction, which the writer runs.
 */
const readerStatement = (reader: Database, sql: string): Prepared | undefined => {
  if (!query.test(sql)) return undefined
  try {
    const statement = reader.query(sql)
    return statement.readonly ? statement : undefined
  } catch {
    return undefined
  }
}

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
    const onWriter = runOn(writerDb)
    const writer = connectionOver(onWriter)
    const readerDb = filename === ":memory:" ? null : yield* open(filename)
    const semaphore = yield* Effect.makeSemaphore(1)
    // A write outside a transaction commits on its own, at the durability its fiber asked for.
    const exclusive = <A, E>(effect: Effect.Effect<A, E>) =>
      semaphore.withPermits(1)(
        Effect.acquireUseRelease(
          relaxIfAsked(writerDb),
          () => effect,
          (putBack) => putBack
        )
      )
    // Outside a transaction: a query that writes nothing to the reader (a file's), anything else to
    // the writer, one at a time.
    const routed = connectionOver((sql, params, values) =>
      Effect.suspend(() => {
        const onReader = readerDb === null ? undefined : readerStatement(readerDb, sql)
        return onReader !== undefined ? rows(() => onReader, params, values) : exclusive(onWriter(sql, params, values))
      })
    )
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
