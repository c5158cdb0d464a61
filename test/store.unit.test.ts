import { describe, expect } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Option } from "effect"
import { loadConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { commitWithoutFlush } from "../src/store/commitDurability.js"
import { StoreInfoTag } from "../src/store/Database.js"
import { MetricsRepo } from "../src/store/MetricsRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { StoreTransactions } from "../src/store/StoreTransactions.js"
import { advertised } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { it } from "./support/effectTest.js"

const demo = Either.getOrThrow(loadConfig(undefined, {})).catalog
const storeLayer = StoreLive

describe("store", () => {
  it.live("the catalog upsert is idempotent and survives a restart on the same file", () =>
    Effect.gen(function* () {
      const file = join(mkdtempSync(join(tmpdir(), "sextant-store-")), "nested", "sextant.db")
      const upsertAndCount = Effect.gen(function* () {
        const catalogWrites = yield* CatalogWritesRepo
        const reads = yield* ResourceReadsRepo
        const sql = yield* SqlClient.SqlClient
        yield* catalogWrites.upsertCatalog(demo)
        const [row] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM payment_options`
        return { records: yield* reads.list(), options: Number(row?.n) }
      })
      const first = yield* Effect.provide(upsertAndCount, storeLayer(file))
      const second = yield* Effect.provide(upsertAndCount, storeLayer(file))
      const expectedOptions = demo.reduce((n, e) => n + e.paymentOptions.length, 0)
      expect(first.records.length).toBe(demo.length)
      expect(second.records.length).toBe(demo.length)
      expect(second.options).toBe(expectedOptions)
      expect(second.records).toEqual(first.records)
    })
  )

  it.live("records round-trip with capabilities, options and an earned status kept across upserts", () =>
    Effect.gen(function* () {
      const program = Effect.gen(function* () {
        const catalogWrites = yield* CatalogWritesRepo
        const listings = yield* ResourceListingRepo
        const reads = yield* ResourceReadsRepo
        yield* catalogWrites.upsertCatalog(demo)
        yield* listings.setStatus(ResourceId.make("stellar-intel.rwa.inspect"), "PAYMENT_VERIFIED", 2)
        yield* catalogWrites.upsertCatalog(demo)
        const record = Option.getOrThrow(yield* reads.get(ResourceId.make("stellar-intel.rwa.inspect")))
        const byCap = yield* reads.byCapability("rwa.inspect")
        const missing = yield* reads.get(ResourceId.make("nope"))
        return { record, byCap, missing }
      })
      const { record, byCap, missing } = yield* Effect.provide(program, storeLayer(":memory:"))
      expect(record.resource.status).toBe("PAYMENT_VERIFIED")
      expect(record.resource.verificationLevel).toBe(2)
      expect(record.resource.capabilities).toEqual(["rwa.inspect"])
      expect(record.paymentOptions[0]?.amount).toBe("10000")
      expect(byCap.map((r) => r.resource.id).sort()).toEqual<unknown>([
        "demo-fast.mcp.inspect",
        "demo-fast.rwa.inspect",
        "demo-flaky.rwa.inspect",
        "demo-raiser.rwa.inspect",
        "demo-slow.rwa.inspect",
        "stellar-intel.mcp.inspect",
        "stellar-intel.rwa.inspect"
      ])
      expect(Option.isNone(missing)).toBe(true)
    })
  )

  it.live("a file store reports WAL and durable writes; an in-memory one reports it is not durable", () =>
    Effect.gen(function* () {
      const file = join(mkdtempSync(join(tmpdir(), "sextant-store-")), "s.db")
      const info = (database: string) => Effect.provide(StoreInfoTag, storeLayer(database))
      // synchronous FULL fsyncs every commit: the journal survives power loss.
      expect(yield* info(file)).toEqual({
        kind: "sqlite",
        location: file,
        journalMode: "wal",
        synchronous: "FULL",
        durable: true
      })
      // Nothing in memory survives the process.
      expect(yield* info(":memory:")).toMatchObject({ kind: "sqlite", location: ":memory:", durable: false })
    })
  )

  it.live("a commit without a flush runs at synchronous NORMAL on SQLite; every other one stays FULL", () =>
    Effect.gen(function* () {
      const file = join(mkdtempSync(join(tmpdir(), "sextant-store-")), "s.db")
      const level = (sql: SqlClient.SqlClient) =>
        Effect.map(sql<{ synchronous: number }>`PRAGMA synchronous`, ([row]) => row?.synchronous)
      const program = Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { transaction } = yield* StoreTransactions
        yield* sql`CREATE TABLE t (v INTEGER)`
        const relaxed = yield* commitWithoutFlush(
          transaction(Effect.zipLeft(level(sql), sql`INSERT INTO t VALUES (1)`))
        )
        const plain = yield* transaction(Effect.zipLeft(level(sql), sql`INSERT INTO t VALUES (2)`))
        // A write on its own (no transaction) commits at the level asked for too.
        const [single] = yield* commitWithoutFlush(
          sql<{
            synchronous: number
          }>`INSERT INTO t VALUES (3) RETURNING (SELECT synchronous FROM pragma_synchronous) AS synchronous`
        )
        const [count] = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM t`
        return { relaxed, plain, single: single?.synchronous, after: yield* level(sql), rows: Number(count?.n) }
      })
      // 1 is NORMAL, 2 is FULL; the relaxed commits are visible at once.
      expect(yield* Effect.provide(program, storeLayer(file))).toEqual({
        relaxed: 1,
        plain: 2,
        single: 1,
        after: 2,
        rows: 3
      })
    })
  )

  it.live(
    "a payee's shortlist: a quarantined one, one of a denied provider, and the first few in id order that could pass on current evidence",
    () =>
      Effect.gen(function* () {
        const payee = "GPAYEEXAMPLE"
        const paying = (id: string, provider: string, payTo = payee) => ({
          ...entry(id, `http://127.0.0.1:9/${id}`, [{ ...advertised, payTo }]),
          provider: { id: provider, name: provider }
        })
        const program = Effect.gen(function* () {
          const catalogWrites = yield* CatalogWritesRepo
          const listings = yield* ResourceListingRepo
          const sql = yield* SqlClient.SqlClient
          yield* catalogWrites.upsertCatalog([
            ...Array.from({ length: 20 }, (_, i) => paying(`a-${String(i).padStart(2, "0")}`, "a")),
            paying("b-0", "b"),
            paying("a-q", "a"),
            paying("a-u", "a"),
            paying("c-0", "c", "GSOMEONEELSE")
          ])
          const measured = (id: string, validChallenge: boolean, at = "2026-01-01T00:00:00.000Z") =>
            sql`INSERT INTO resource_metrics (resource_id, availability, payment_interface_success_rate, transaction_success_rate,
              price_consistency, reliability, observation_count, last_observed_at, valid_challenge_seen, transaction_verified, updated_at)
            VALUES (${id}, 1, 1, 0, 1, 1, 3, ${at}, ${validChallenge ? 1 : 0}, 0, ${at})`
          // a-00, a-04, ...: never probed; a-01, ...: no valid challenge; a-02, ...: offline; a-03, ...:
          // could pass, except a-07, observed before the cut-off.
          for (let i = 0; i < 20; i++) {
            const id = `a-${String(i).padStart(2, "0")}`
            if (i % 4 !== 0) yield* measured(id, i % 4 !== 1, i === 7 ? "2025-12-31T23:59:59.999Z" : undefined)
            yield* listings.setStatus(ResourceId.make(id), i % 4 === 2 ? "OFFLINE" : "LIVE", 1)
          }
          // Unlisted (no evidence) and another payee's: each could pass, and neither may be read.
          for (const id of ["b-0", "a-u", "a-q", "c-0"]) yield* measured(id, true)
          yield* sql`UPDATE resources SET listed = 0 WHERE id IN ('a-q', 'a-u')`
          yield* sql`UPDATE resources SET status = 'QUARANTINED', quarantined_by = 'op' WHERE id = 'a-q'`
          const metrics = yield* MetricsRepo
          const ids = (payTo: string, denied: ReadonlyArray<string>) =>
            Effect.map(
              metrics.payeeShortlist(payTo, {
                limit: 3,
                deniedProviders: denied,
                observedSince: "2026-01-01T00:00:00.000Z"
              }),
              (list) => list.map((s) => `${s.standing.resourceId}/${s.providerId}`).sort()
            )
          return {
            plain: yield* ids(payee, []),
            deniedB: yield* ids(payee, ["b", "nobody"]),
            deniedNobody: yield* ids(payee, ["nobody"]),
            other: yield* ids("GSOMEONEELSE", ["c"]),
            unknown: yield* ids("GNOBODY", ["a"])
          }
        })
        // The quarantined a-q is evidence though unlisted; b-0, the only resource of provider b, is the
        // last in id order and comes only when b is denied.
        const first = ["a-03/a", "a-11/a", "a-15/a", "a-q/a"]
        expect(yield* Effect.provide(program, storeLayer(":memory:"))).toEqual({
          plain: first,
          deniedB: [...first, "b-0/b"],
          deniedNobody: first,
          other: ["c-0/c"],
          unknown: []
        })
      })
  )

  it.live("economic events are found by transaction hash through an index, not a scan of every payment", () =>
    Effect.gen(function* () {
      // What one-transaction-one-resource asks on every settle and economic probe (EconomicEventsRepo.claimedElsewhere).
      const plan = yield* Effect.provide(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) =>
            sql<{ detail: string }>`EXPLAIN QUERY PLAN SELECT resource_id FROM economic_events
              WHERE transaction_hash = ${"ab".repeat(32)} AND state <> 'rejected' AND resource_id IS NOT NULL`
        ),
        storeLayer(":memory:")
      )

      expect(plan.map((row) => row.detail)).toEqual([
        expect.stringContaining("USING INDEX economic_events_transaction")
      ])
    })
  )
})
