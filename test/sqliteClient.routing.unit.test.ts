import { afterAll, describe, expect } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient, SqlError } from "@effect/sql"
import { Deferred, Effect, Fiber } from "effect"
import { sqliteClientLayer } from "../src/store/sqliteClient.js"
import { it } from "./support/effectTest.js"

/**
 * A SQLite file gets a writer and a reader connection. What a user notices of the routing: a
 * query outside a transaction is not held up by a transaction on the writer and sees the last
 * commit; inside a transaction it sees the transaction's own writes; anything that writes, or sets
 * the connection, runs on the writer in turn. Each case below is observed through the client only.
 */
const dir = mkdtempSync(join(tmpdir(), "sextant-sqlite-routing-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

/** `body` on a client of a new file holding table `t` with the committed row n = 1. */
const onFile = <A>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.scoped(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.zipRight(Effect.zipRight(sql`CREATE TABLE t (n INTEGER)`, sql`INSERT INTO t VALUES (1)`), body(sql))
    )
  ).pipe(Effect.provide(sqliteClientLayer(join(dir, `${++files}.sqlite`)))) as Effect.Effect<A>

/**
 * Forks a transaction that writes n = 2 and holds the writer until `release` is done (then calls
 * `committed`); answers once it holds it, with the fiber that commits.
 */
const holdWriter = (sql: SqlClient.SqlClient, release: Deferred.Deferred<void>, committed = () => {}) =>
  Effect.gen(function* () {
    const holding = yield* Deferred.make<void>()
    const fiber = yield* Effect.fork(
      sql
        .withTransaction(
          Effect.zipRight(
            Effect.zipRight(sql`INSERT INTO t VALUES (2)`, Deferred.succeed(holding, undefined)),
            Deferred.await(release)
          )
        )
        .pipe(Effect.tap(() => Effect.sync(committed)))
    )
    yield* Deferred.await(holding)
    return fiber
  })

const values = (rows: ReadonlyArray<{ n: unknown }>) => rows.map((row) => row.n)
const readT = (sql: SqlClient.SqlClient) => Effect.map(sql<{ n: number }>`SELECT n FROM t ORDER BY n`, values)
const readTWith = (sql: SqlClient.SqlClient) =>
  Effect.map(sql<{ n: number }>`WITH x AS (SELECT n FROM t) SELECT n FROM x ORDER BY n`, values)

describe("the SQLite client's reader and writer", () => {
  it.live("a query outside a transaction does not wait for one holding the writer, and sees the last commit", () =>
    Effect.gen(function* () {
      const seen = yield* onFile((sql) =>
        Effect.gen(function* () {
          const release = yield* Deferred.make<void>()
          const holder = yield* holdWriter(sql, release)
          // On the writer these would wait for `release`, which only comes after them: the bound
          // fails a client that queues them there instead of hanging the test.
          const during = yield* Effect.all([readT(sql), readTWith(sql)]).pipe(
            Effect.timeoutFail({ duration: "3 seconds", onTimeout: () => "the query queued behind the writer" }),
            Effect.ensuring(Deferred.succeed(release, undefined))
          )
          yield* Fiber.join(holder)
          return { during, afterCommit: yield* Effect.all([readT(sql), readTWith(sql)]) }
        })
      )
      expect(seen.during).toEqual([[1], [1]])
      expect(seen.afterCommit).toEqual([
        [1, 2],
        [1, 2]
      ])
    })
  )

  it.live("a query inside a transaction sees the transaction's own uncommitted writes", () =>
    Effect.gen(function* () {
      const seen = yield* onFile((sql) =>
        sql.withTransaction(Effect.zipRight(sql`INSERT INTO t VALUES (2)`, Effect.all([readT(sql), readTWith(sql)])))
      )
      expect(seen).toEqual([
        [1, 2],
        [1, 2]
      ])
    })
  )

  it.live("a WITH ... INSERT waits for the transaction holding the writer, then commits after it", () =>
    Effect.gen(function* () {
      const seen = yield* onFile((sql) =>
        Effect.gen(function* () {
          const order: Array<string> = []
          const release = yield* Deferred.make<void>()
          const holder = yield* holdWriter(sql, release, () => order.push("commit"))
          // The holder resumes only after this fiber next waits, so the insert is issued while the
          // writer is held. On the reader it would meet SQLite's write lock and fail as busy.
          yield* Deferred.succeed(release, undefined)
          yield* sql`WITH v(n) AS (VALUES (3)) INSERT INTO t SELECT n FROM v`
          order.push("insert")
          yield* Fiber.join(holder)
          return { order, rows: yield* readT(sql) }
        })
      )
      expect(seen.order).toEqual(["commit", "insert"])
      expect(seen.rows).toEqual([1, 2, 3])
    })
  )

  it.live("a PRAGMA runs on the writer: the setting it makes is the one read back, in and out of a transaction", () =>
    Effect.gen(function* () {
      const seen = yield* onFile((sql) =>
        Effect.gen(function* () {
          yield* sql`PRAGMA synchronous = OFF`
          const [outside] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
          const [inside] = yield* sql.withTransaction(sql<{ synchronous: number }>`PRAGMA synchronous`)
          return [outside?.synchronous, inside?.synchronous]
        })
      )
      expect(seen).toEqual([0, 0])
    })
  )

  it.live("a query the reader cannot prepare is answered by the writer, its errors included", () =>
    Effect.gen(function* () {
      const seen = yield* onFile((sql) =>
        Effect.gen(function* () {
          // A temporary table exists on the connection that made it only.
          yield* sql`CREATE TEMP TABLE scratch (n INTEGER)`
          yield* sql`INSERT INTO scratch VALUES (5)`
          return {
            scratch: values(yield* sql<{ n: number }>`SELECT n FROM scratch`),
            broken: yield* Effect.flip(sql`SELECT n FROM nowhere`)
          }
        })
      )
      expect(seen.scratch).toEqual([5])
      expect(seen.broken).toBeInstanceOf(SqlError.SqlError)
      expect(String((seen.broken as SqlError.SqlError).cause)).toContain("no such table: nowhere")
    })
  )
})
