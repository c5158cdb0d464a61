/**
 * Start-up proportional to what changed: a catalog file whose content the store loaded
 * last is neither decoded nor diffed; any change, or a store without the mark of a committed load,
 * takes the full load; a file that does not decode stops start-up with its config error.
 */
import { describe, expect } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer } from "effect"
import { CatalogLoad } from "../src/catalog/CatalogLoad.js"
import { AppConfig, ConfigError } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { CurationRepo } from "../src/store/CurationRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { entry } from "./fixtures/verificationStack.js"
import { it } from "./support/effectTest.js"
import { serveUntilExit } from "./support/serveProcess.js"
import { testConfig } from "./support/server.js"

const catalogOf = (n: number): Array<CatalogEntry> =>
  Array.from({ length: n }, (_, i) => entry(`c${i}`, `http://127.0.0.1:9/c${i}`))

/** A store file and a catalog file beside it, and a start-up (the catalog load over the store) against them. */
const setup = () => {
  const folder = mkdtempSync(join(tmpdir(), "sextant-catalog-load-"))
  const file = join(folder, "catalog.json")
  const config = testConfig({ database: join(folder, "sextant.db"), catalog: [], catalogFile: file })
  const store = StoreLive(config.database)
  const write = (catalog: unknown) => writeFileSync(file, JSON.stringify(catalog, null, 2))
  /** One start-up: the store opened and the catalog loaded, then closed, as `serve` does before listening. */
  const start = () =>
    Effect.exit(
      Effect.scoped(
        Layer.build(CatalogLoad.pipe(Layer.provideMerge(store), Layer.provide(Layer.succeed(AppConfig, config))))
      )
    )
  /** `effect` on the store alone, opened for it and closed after. */
  const inStore = <A>(
    effect: Effect.Effect<
      A,
      never,
      CatalogWritesRepo | ResourceListingRepo | ResourceReadsRepo | CurationRepo | SqlClient.SqlClient
    >
  ) => Effect.provide(effect, store)
  /** Every stored trace of the catalog: rows with their times and hashes, capabilities, options, search words, listing changes, the mark. */
  const snapshot = () =>
    inStore(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return {
          resources: yield* sql`SELECT * FROM resources ORDER BY id`,
          capabilities: yield* sql`SELECT * FROM resource_capabilities ORDER BY resource_id, capability`,
          options: yield* sql`SELECT * FROM payment_options ORDER BY resource_id, option_index`,
          search:
            yield* sql`SELECT resource_id, name_words, capability_words, description_words FROM resource_search ORDER BY resource_id`,
          listings: yield* sql`SELECT resource_id, listed, actor FROM listing_changes ORDER BY id`,
          mark: yield* sql`SELECT * FROM catalog_loads`
        }
      }).pipe(Effect.orDie)
    )
  return { config, file, write, start, inStore, snapshot }
}

const rowOf = (snapshot: { resources: ReadonlyArray<any> }, id: string) => snapshot.resources.find((r) => r.id === id)

describe("catalog load at start", () => {
  it.live("an unchanged restart writes nothing, keeps operator curation, and the store still answers the catalog", () =>
    Effect.gen(function* () {
      const s = setup()
      s.write(catalogOf(20))
      expect(Exit.isSuccess(yield* s.start())).toBe(true)
      const author = { actor: "op", reason: "looks off" }
      yield* s.inStore(
        Effect.gen(function* () {
          yield* (yield* ResourceListingRepo).setListed(ResourceId.make("c3"), false, { ...author, hold: "operator" })
          yield* (yield* CurationRepo).quarantine(ResourceId.make("c4"), author)
        })
      )
      const before = yield* s.snapshot()
      expect(before.mark).toHaveLength(1)
      expect(Exit.isSuccess(yield* s.start())).toBe(true)
      const after = yield* s.snapshot()
      // The same rows, times, hashes, words and listing history, and the mark of the first load (not rewritten).
      expect(after).toEqual(before)
      expect(rowOf(after, "c3")).toMatchObject({ listed: 0, listing_hold: "operator" })
      expect(rowOf(after, "c4")).toMatchObject({ quarantined_by: "op" })
      const listed = yield* s.inStore(Effect.flatMap(ResourceReadsRepo, (repo) => repo.list()))
      expect(listed.map((r) => r.resource.id).sort()).toEqual(
        catalogOf(20)
          .map((e) => e.resource.id)
          .filter((id) => id !== "c3")
          .sort()
      )
    })
  )

  it.live("editing one entry between starts writes exactly that entry, and keeps its operator unlisting", () =>
    Effect.gen(function* () {
      const s = setup()
      const catalog = catalogOf(20)
      s.write(catalog)
      yield* s.start()
      yield* s.inStore(
        Effect.flatMap(ResourceListingRepo, (repo) =>
          repo.setListed(ResourceId.make("c7"), false, { actor: "op", reason: "paused", hold: "operator" })
        )
      )
      const before = yield* s.snapshot()
      yield* Effect.sleep(5) // so a rewritten row's updated_at would differ
      const edited = catalog.map((e) =>
        e.resource.id === "c7"
          ? { ...e, resource: { ...e.resource, name: "renamed", capabilities: ["fixture.other"] } }
          : e
      )
      s.write(edited)
      expect(Exit.isSuccess(yield* s.start())).toBe(true)
      const after = yield* s.snapshot()
      const changed = after.resources.filter((row, i) => JSON.stringify(row) !== JSON.stringify(before.resources[i]))
      expect(changed.map((r: any) => r.id)).toEqual(["c7"])
      expect(rowOf(after, "c7")).toMatchObject({
        name: "renamed",
        listed: 0,
        listing_hold: "operator",
        source: "config"
      })
      expect(after.capabilities.filter((c: any) => c.resource_id === "c7")).toEqual([
        { resource_id: "c7", capability: "fixture.other" }
      ])
      expect(after.capabilities.filter((c: any) => c.resource_id !== "c7")).toEqual(
        before.capabilities.filter((c: any) => c.resource_id !== "c7")
      )
      expect(after.options).toEqual(before.options)
      expect(after.listings).toEqual(before.listings)
      expect(after.mark[0]!.content_key).not.toBe(before.mark[0]!.content_key)
      // And the edited file is what a next unchanged start finds marked.
      yield* s.start()
      expect(yield* s.snapshot()).toEqual(after)
    })
  )

  it.live("a load that did not commit leaves the previous mark and rows; the next start loads the file in full", () =>
    Effect.gen(function* () {
      const s = setup()
      const catalog = catalogOf(10)
      s.write(catalog)
      yield* s.start()
      const before = yield* s.snapshot()
      // The store refuses one row of the next file part-way through its load.
      yield* s.inStore(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`CREATE TRIGGER refuse_boom BEFORE INSERT ON resources WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END`.pipe(
            Effect.orDie
          )
        )
      )
      const next = [
        ...catalog.map((e) => ({ ...e, resource: { ...e.resource, description: "changed" } })),
        entry("boom", "http://127.0.0.1:9/boom")
      ]
      s.write(next)
      expect(Exit.isFailure(yield* s.start())).toBe(true)
      expect(yield* s.snapshot()).toEqual(before)
      yield* s.inStore(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP TRIGGER refuse_boom`.pipe(Effect.orDie)))
      expect(Exit.isSuccess(yield* s.start())).toBe(true)
      const after = yield* s.snapshot()
      expect(after.resources.map((r: any) => [r.id, r.description])).toEqual(
        [...next]
          .sort((a, b) => a.resource.id.localeCompare(b.resource.id))
          .map((e) => [e.resource.id, e.resource.description])
      )
      expect(after.mark).toHaveLength(1)
    })
  )

  it.live("a store without a mark (an older store, or one whose load never committed) loads the file in full", () =>
    Effect.gen(function* () {
      const s = setup()
      s.write(catalogOf(5))
      yield* s.start()
      // Rows as an interrupted or older writer could have left them, and no mark.
      yield* s.inStore(
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([
            sql`UPDATE resources SET name = 'stale', catalog_hash = NULL WHERE id = 'c2'`,
            sql`DELETE FROM catalog_loads`
          ]).pipe(Effect.orDie)
        )
      )
      expect(Exit.isSuccess(yield* s.start())).toBe(true)
      const after = yield* s.snapshot()
      expect(rowOf(after, "c2")).toMatchObject({ name: "c2" })
      expect(after.mark).toHaveLength(1)
    })
  )

  it.live("another source taking over a file entry forgets the mark, so the next start takes the entry back", () =>
    Effect.gen(function* () {
      const s = setup()
      s.write(catalogOf(5))
      yield* s.start()
      yield* s.inStore(
        Effect.flatMap(CatalogWritesRepo, (repo) =>
          repo.upsertListed(entry("c1", "http://127.0.0.1:9/elsewhere"), "registration", {
            actor: "someone",
            reason: "registered"
          })
        )
      )
      expect((yield* s.snapshot()).mark).toHaveLength(0)
      yield* s.start()
      expect(rowOf(yield* s.snapshot(), "c1")).toMatchObject({ source: "config", url: "http://127.0.0.1:9/c1" })
    })
  )

  it.live("an invalid file stops start-up with its config error although an earlier valid file is marked", () =>
    Effect.gen(function* () {
      const s = setup()
      s.write(catalogOf(3))
      yield* s.start()
      const before = yield* s.snapshot()
      const invalid = catalogOf(3).map((e, i) =>
        i === 1 ? { ...e, resource: { ...e.resource, url: "ftp://nope" } } : e
      )
      s.write(invalid)
      const exit = yield* s.start()
      expect(Exit.isFailure(exit) && exit.cause._tag === "Fail" && exit.cause.error).toEqual(
        new ConfigError("catalog.[1].resource.url", "expected an http(s) URL")
      )
      expect(yield* s.snapshot()).toEqual(before)
      writeFileSync(s.file, "[not json")
      const notJson = yield* s.start()
      expect(
        Exit.isFailure(notJson) && notJson.cause._tag === "Fail" && (notJson.cause.error as ConfigError).line
      ).toStartWith(`config error: catalog: ${s.file} is not valid JSON:`)
      // Through `sextant serve`: exit 2 and exactly the one line, before anything listens.
      s.write(invalid)
      const configFile = join(resolve(s.file, ".."), "config.json")
      writeFileSync(
        configFile,
        JSON.stringify({
          database: s.config.database,
          catalog: "catalog.json",
          vertical: { enabled: false },
          ledger: { sorobanRpcUrl: "http://127.0.0.1:9", horizonUrl: "http://127.0.0.1:9" }
        })
      )
      const { code, stderr } = yield* Effect.promise(() => serveUntilExit(configFile))
      expect(code).toBe(2)
      expect(stderr.trim().split("\n")).toEqual(["config error: catalog.[1].resource.url: expected an http(s) URL"])
    })
  )
})
