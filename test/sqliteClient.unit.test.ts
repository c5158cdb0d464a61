import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Database } from "bun:sqlite"
import { Effect } from "effect"
import { sqliteClientLayer } from "../src/store/sqliteClient.js"

/**
 * The client writes every parameter as `+?` (so SQLite does not recompile a statement each time
 * it is bound again). What a statement answers must not change: the same rows as `?` gives, with
 * the column's affinity applied, for every kind of value and every place a parameter goes.
 */
const run = <A>(body: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(SqlClient.SqlClient, body)).pipe(Effect.provide(sqliteClientLayer(":memory:"))) as Effect.Effect<A>)

describe("the SQLite client's parameters", () => {
  test("are written +? and compare with the column's affinity, as bare ones do", async () => {
    const rows = await run((sql) =>
      Effect.gen(function* () {
        yield* sql`CREATE TABLE t (n INTEGER, s TEXT, b BLOB)`
        yield* sql`INSERT INTO t ${sql.insert([{ n: 5, s: "5", b: new Uint8Array([1, 2]) }, { n: 7, s: "x", b: null }])}`
        const [compiled] = sql`SELECT n FROM t WHERE n = ${"5"}`.compile()
        return {
          compiled,
          textAgainstInteger: yield* sql`SELECT n FROM t WHERE n = ${"5"}`,
          numberAgainstText: yield* sql`SELECT s FROM t WHERE s = ${5}`,
          blob: yield* sql`SELECT n FROM t WHERE b = ${new Uint8Array([1, 2])}`,
          isNull: yield* sql`SELECT n FROM t WHERE b IS ${null}`,
          list: yield* sql`SELECT n FROM t WHERE ${sql.in("n", [7, 9])}`,
          limit: yield* sql`SELECT t.n FROM t JOIN t AS u ON u.n = t.n WHERE t.n > ${0} ORDER BY t.n LIMIT ${1}`,
          update: yield* sql`UPDATE t SET s = ${"y"} WHERE n = ${7} RETURNING s`
        }
      })
    )
    expect(rows.compiled).toBe("SELECT n FROM t WHERE n = +?")
    expect(rows.textAgainstInteger).toEqual([{ n: 5 }])
    expect(rows.numberAgainstText).toEqual([{ s: "5" }])
    expect(rows.blob).toEqual([{ n: 5 }])
    expect(rows.isNull).toEqual([{ n: 7 }])
    expect(rows.list).toEqual([{ n: 7 }])
    expect(rows.limit).toEqual([{ n: 5 }])
    expect(rows.update).toEqual([{ s: "y" }])
  })

  test("give the rows bare parameters give on SQLite itself", () => {
    const db = new Database(":memory:")
    db.run("CREATE TABLE t (n INTEGER, s TEXT)")
    db.run("INSERT INTO t VALUES (5, '5'), (7, 'x')")
    for (const [where, value] of [["n = ?", "5"], ["s = ?", 5], ["n > ?", "6"], ["s IS ?", null]] as const) {
      const bare = db.query(`SELECT n FROM t WHERE ${where}`).all(value)
      expect(db.query(`SELECT n FROM t WHERE ${where.replace("?", "+?")}`).all(value)).toEqual(bare)
    }
  })
})
