import { describe, expect } from "bun:test"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { type CatalogChange, CatalogChanges } from "../src/store/CatalogChanges.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { StoreTest } from "../src/store/Store.js"
import { StoreTransactions } from "../src/store/StoreTransactions.js"
import { entry } from "./fixtures/verificationStack.js"
import { it } from "./support/effectTest.js"

/** `body` over a fresh in-memory store with a listener recording every delivered change. */
const withListener = <A>(
  body: (
    heard: Array<CatalogChange>
  ) => Effect.Effect<A, never, CatalogWritesRepo | ResourceListingRepo | StoreTransactions>
) =>
  Effect.gen(function* () {
    const heard: Array<CatalogChange> = []
    yield* (yield* CatalogChanges).subscribe((change) => heard.push(change))
    yield* (yield* CatalogWritesRepo).upsertCatalog([entry("a", "http://127.0.0.1:9/a")])
    heard.length = 0
    return yield* body(heard)
  }).pipe(Effect.provide(StoreTest))

describe("catalog changes through StoreTransactions", () => {
  it.live("a write inside a transaction is tracked, and delivered only once the transaction commits", () =>
    Effect.gen(function* () {
      const out = yield* withListener((heard) =>
        Effect.gen(function* () {
          const { transaction } = yield* StoreTransactions
          const repo = yield* ResourceListingRepo
          const inside = yield* transaction(
            Effect.gen(function* () {
              yield* repo.setStatus(ResourceId.make("a"), "LIVE", 1)
              // A nested transaction (a savepoint) holds its changes for the outer one too.
              yield* transaction(repo.setListed(ResourceId.make("a"), false, { actor: "op", reason: "test" }))
              return heard.length
            })
          )
          return { inside, after: [...heard] }
        })
      )
      expect(out.inside).toBe(0)
      expect(out.after).toEqual([{ _tag: "Resources", ids: ["a"] }, { _tag: "Catalog" }])
    })
  )

  it.live(
    "a write outside a transaction is delivered at once; a rolled-back transaction still delivers (a reload, never a stale read)",
    () =>
      Effect.gen(function* () {
        const out = yield* withListener((heard) =>
          Effect.gen(function* () {
            const { transaction } = yield* StoreTransactions
            const repo = yield* ResourceListingRepo
            yield* repo.setVouched(ResourceId.make("a"), true)
            const alone = heard.length
            const failed = yield* Effect.either(
              transaction(Effect.zipRight(repo.setStatus(ResourceId.make("a"), "LIVE", 1), Effect.fail("stop")))
            )
            return { alone, failed: failed._tag, after: heard.length }
          })
        )
        expect(out).toEqual({ alone: 1, failed: "Left", after: 2 })
      })
  )
})
