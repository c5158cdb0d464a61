import { describe, expect } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, TestClock } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { CurationRepo } from "../src/store/CurationRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { StoreTest } from "../src/store/Store.js"
import { entry } from "./fixtures/verificationStack.js"
import { it } from "./support/effectTest.js"

const HOUR = 3_600_000
/** A time far from the wall clock, so a write that read the wall clock instead is seen. */
const T0 = Date.UTC(2020, 0, 1)

describe("the store follows the Clock", () => {
  it.effect("an unlisted validation is pruned by its age on the TestClock, not the wall clock", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      yield* (yield* CatalogWritesRepo).insertUnlisted(entry("v1", "http://127.0.0.1:9/v1"), "validate", {
        actor: "someone",
        reason: "validated"
      })
      const listings = yield* ResourceListingRepo
      yield* TestClock.adjust(2 * HOUR)
      // Written at T0: a cutoff before T0 keeps it, one after T0 takes it.
      const kept = yield* listings.pruneUnlisted(T0 - HOUR)
      const pruned = yield* listings.pruneUnlisted(T0 + HOUR)
      expect({ kept, pruned }).toEqual({ kept: 0, pruned: 1 })
    }).pipe(Effect.provide(StoreTest))
  )

  it.effect("listing changes, status updates and operator actions are stamped with the TestClock's time", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      yield* (yield* CatalogWritesRepo).upsertCatalog([entry("c1", "http://127.0.0.1:9/c1")])
      yield* TestClock.adjust(HOUR)
      const listings = yield* ResourceListingRepo
      yield* listings.setListed(ResourceId.make("c1"), false, { actor: "op", reason: "paused" })
      yield* TestClock.adjust(HOUR)
      yield* listings.setStatus(ResourceId.make("c1"), "LIVE", 1)
      const action = yield* (yield* CurationRepo).quarantine(ResourceId.make("c1"), { actor: "op", reason: "held" })
      const sql = yield* SqlClient.SqlClient
      const changes = yield* sql<{
        at_ms: unknown
      }>`SELECT at_ms FROM listing_changes WHERE resource_id = 'c1' ORDER BY at_ms`
      const [row] = yield* sql<{
        created_at: string
        updated_at: string
      }>`SELECT created_at, updated_at FROM resources WHERE id = 'c1'`
      expect(changes.map((c) => Number(c.at_ms))).toEqual([T0, T0 + HOUR])
      expect(row).toEqual({ created_at: new Date(T0).toISOString(), updated_at: new Date(T0 + 2 * HOUR).toISOString() })
      expect(action._tag === "Some" ? action.value.at : null).toBe(new Date(T0 + 2 * HOUR).toISOString())
    }).pipe(Effect.provide(StoreTest))
  )
})
