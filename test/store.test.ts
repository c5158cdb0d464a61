import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { loadConfig } from "../src/config.js"
import { StoreInfoTag } from "../src/store/Database.js"
import { StoreLive } from "../src/store/Store.js"
import { ResourcesRepo } from "../src/store/ResourcesRepo.js"

const demo = Either.getOrThrow(loadConfig(undefined, {})).catalog
const storeLayer = StoreLive

describe("store", () => {
  test("the catalog upsert is idempotent and survives a restart on the same file", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "sextant-store-")), "nested", "sextant.db")
    const upsertAndCount = Effect.gen(function* () {
      const repo = yield* ResourcesRepo
      const sql = yield* SqlClient.SqlClient
      yield* repo.upsertCatalog(demo)
      const [row] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM payment_options`
      return { records: yield* repo.list(), options: Number(row?.n) }
    })
    const first = await Effect.runPromise(Effect.provide(upsertAndCount, storeLayer(file)))
    const second = await Effect.runPromise(Effect.provide(upsertAndCount, storeLayer(file)))
    const expectedOptions = demo.reduce((n, e) => n + e.paymentOptions.length, 0)
    expect(first.records.length).toBe(demo.length)
    expect(second.records.length).toBe(demo.length)
    expect(second.options).toBe(expectedOptions)
    expect(second.records).toEqual(first.records)
  })

  test("records round-trip with capabilities, options and an earned status kept across upserts", async () => {
    const program = Effect.gen(function* () {
      const repo = yield* ResourcesRepo
      yield* repo.upsertCatalog(demo)
      yield* repo.setStatus("stellar-intel.rwa.inspect", "PAYMENT_VERIFIED", 2)
      yield* repo.upsertCatalog(demo)
      const record = Option.getOrThrow(yield* repo.get("stellar-intel.rwa.inspect"))
      const byCap = yield* repo.byCapability("rwa.inspect")
      const missing = yield* repo.get("nope")
      return { record, byCap, missing }
    })
    const { record, byCap, missing } = await Effect.runPromise(Effect.provide(program, storeLayer(":memory:")))
    expect(record.resource.status).toBe("PAYMENT_VERIFIED")
    expect(record.resource.verificationLevel).toBe(2)
    expect(record.resource.capabilities).toEqual(["rwa.inspect"])
    expect(record.paymentOptions[0]?.amount).toBe("10000")
    expect(byCap.map((r) => r.resource.id).sort()).toEqual([
      "demo-fast.rwa.inspect",
      "demo-flaky.rwa.inspect",
      "demo-raiser.rwa.inspect",
      "demo-slow.rwa.inspect",
      "stellar-intel.rwa.inspect"
    ])
    expect(Option.isNone(missing)).toBe(true)
  })

  test("a file store reports WAL and durable writes", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "sextant-store-")), "s.db")
    const info = await Effect.runPromise(Effect.provide(StoreInfoTag, storeLayer(file)))
    expect(info).toMatchObject({ kind: "sqlite", journalMode: "wal", location: file })
    expect(typeof info.durable).toBe("boolean")
  })
})
