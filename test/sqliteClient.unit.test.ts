import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { sqliteClientLayer } from "../src/store/sqliteClient.js"
import { it } from "./support/effectTest.js"

/**
 * The client writes every parameter as `+?` (so SQLite does not recompile a statement each time
 * it is bound again). What a statement answers must not change: the same rows as `?` gives, with
 * the column's affinity applied, for every kind of value and every place a parameter goes.
 */
describe("the SQLite client's parameters", () => {
  it.live("are written +? and compare with the column's affinity, as bare ones do", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE t (n INTEGER, s TEXT, b BLOB)`
      yield* sql`INSERT INTO t ${sql.insert([
        { n: 5, s: "5", b: new Uint8Array([1, 2]) },
        { n: 7, s: "x", b: null }
      ])}`
      const [compiled] = sql`SELECT n FROM t WHERE n = ${"5"}`.compile()
      expect(compiled).toBe("SELECT n FROM t WHERE n = +?")
      expect(yield* sql`SELECT n FROM t WHERE n = ${"5"}`).toEqual([{ n: 5 }])
      expect(yield* sql`SELECT s FROM t WHERE s = ${5}`).toEqual([{ s: "5" }])
      expect(yield* sql`SELECT n FROM t WHERE b = ${new Uint8Array([1, 2])}`).toEqual([{ n: 5 }])
      expect(yield* sql`SELECT n FROM t WHERE b IS ${null}`).toEqual([{ n: 7 }])
      expect(yield* sql`SELECT n FROM t WHERE ${sql.in("n", [7, 9])}`).toEqual([{ n: 7 }])
      expect(yield* sql`SELECT t.n FROM t JOIN t AS u ON u.n = t.n WHERE t.n > ${0} ORDER BY t.n LIMIT ${1}`).toEqual([
        { n: 5 }
      ])
      expect(yield* sql`UPDATE t SET s = ${"y"} WHERE n = ${7} RETURNING s`).toEqual([{ s: "y" }])
    }).pipe(Effect.provide(sqliteClientLayer(":memory:")))
  )

  test("give the rows bare parameters give on SQLite itself", () => {
    const db = new Database(":memory:")
    db.run("CREATE TABLE t (n INTEGER, s TEXT)")
    db.run("INSERT INTO t VALUES (5, '5'), (7, 'x')")
    for (const [where, value] of [
      ["n = ?", "5"],
      ["s = ?", 5],
      ["n > ?", "6"],
      ["s IS ?", null]
    ] as const) {
      const bare = db.query(`SELECT n FROM t WHERE ${where}`).all(value)
      expect(db.query(`SELECT n FROM t WHERE ${where.replace("?", "+?")}`).all(value)).toEqual(bare)
    }
  })
})
