import { describe, expect, test } from "bun:test"
import { Clock, Deferred, Effect, Fiber } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { catalogChanged, resourcesChanged } from "../src/store/CatalogChanges.js"
import type { RecordWithStanding } from "../src/store/RouteCandidatesRepo.js"
import { CapabilityIndex, type CapabilityRead, heldReads } from "../src/verification/capabilityIndex.js"
import { record } from "./fixtures/evidence.js"
import { it } from "./support/effectTest.js"

const TTL = 1_000
const readOf = (ids: ReadonlyArray<string>, readAtMs = 0): CapabilityRead => ({
  candidates: ids.map(
    (id): RecordWithStanding => ({
      record: record(id),
      standing: {
        resourceId: ResourceId.make(id),
        status: "DISCOVERED",
        level: 0,
        snapshot: null,
        operatorQuarantine: null
      }
    })
  ),
  readAtMs
})
/** An index holding `held` (capability to resource ids), read at 0. */
const indexWith = (held: Record<string, ReadonlyArray<string>>, maxEntries = 100) => {
  const index = new CapabilityIndex(TTL, maxEntries)
  for (const [capability, ids] of Object.entries(held)) index.finish(index.begin(capability), readOf(ids))
  return index
}

describe("what the capability index holds", () => {
  test("a read answers until it is the TTL old, and never from before it was read", () => {
    const index = indexWith({ a: ["r1"] })
    expect(index.current("a", 0)).toEqual(readOf(["r1"]))
    expect(index.current("a", TTL - 1)).toEqual(readOf(["r1"]))
    expect(index.current("a", TTL)).toBeUndefined()
    expect(indexWith({ a: ["r1"] }).current("a", -1)).toBeUndefined()
    expect(index.current("b", 0)).toBeUndefined()
  })

  test("a change to some resources drops the capabilities holding them, and only those", () => {
    const index = indexWith({ a: ["r1", "r2"], b: ["r3"], empty: [] })
    index.apply(resourcesChanged(["r2", "r9"]))
    expect(index.current("a", 0)).toBeUndefined()
    expect(index.current("b", 0)).toEqual(readOf(["r3"]))
    expect(index.current("empty", 0)).toEqual(readOf([]))
  })

  test("a catalog change drops everything: it may add a candidate to any capability", () => {
    const index = indexWith({ a: ["r1"], empty: [] })
    index.apply(catalogChanged)
    expect(index.current("a", 0)).toBeUndefined()
    expect(index.current("empty", 0)).toBeUndefined()
  })

  test("keeping a read lets go of every read older than the TTL, so memory holds what was routed lately", () => {
    const index = indexWith({ a: ["r1"], b: ["r2"] })
    index.finish(index.begin("c"), readOf(["r3"], TTL))
    expect(index.current("c", TTL)).toEqual(readOf(["r3"], TTL))
    expect(index.held).toBe(1)
  })

  test("the oldest capability goes first when the index is full", () => {
    const index = indexWith({ a: ["r1"], b: ["r2"], c: ["r3"] }, 2)
    expect([index.current("a", 0), index.current("b", 0), index.current("c", 0)].map((r) => r !== undefined)).toEqual([
      false,
      true,
      true
    ])
  })
})

describe("a read of the store that a change overtakes", () => {
  test("is not kept when the change concerns what it read, since it may predate the commit", () => {
    const index = new CapabilityIndex(TTL, 100)
    const ticket = index.begin("a")
    index.apply(resourcesChanged(["r1"]))
    expect(index.overtaken(ticket)).toBe(true)
    index.finish(ticket, readOf(["r1", "r2"]))
    expect(index.current("a", 0)).toBeUndefined()
  })

  test("is not kept after a catalog change, even with nothing read", () => {
    const index = new CapabilityIndex(TTL, 100)
    const ticket = index.begin("a")
    index.apply(catalogChanged)
    index.finish(ticket, readOf([]))
    expect(index.current("a", 0)).toBeUndefined()
  })

  test("is kept when the change is about other resources", () => {
    const index = new CapabilityIndex(TTL, 100)
    const ticket = index.begin("a")
    index.apply(resourcesChanged(["r9"]))
    index.finish(ticket, readOf(["r1"]))
    expect(index.current("a", 0)).toEqual(readOf(["r1"]))
  })

  test("changes are judged against every read under way, also after another read ends", () => {
    const index = new CapabilityIndex(TTL, 100)
    const early = index.begin("a")
    index.apply(resourcesChanged(["r1"]))
    const late = index.begin("b")
    index.finish(late, readOf(["r1"]))
    expect(index.current("b", 0)).toEqual(readOf(["r1"]))
    index.abandon(index.begin("c"))
    index.finish(early, readOf(["r1"]))
    expect(index.current("a", 0)).toBeUndefined()
    expect(index.overtaken(late)).toBe(false)
  })
})

describe("reads through the index", () => {
  it.live("reads arriving while one is under way share it, unless a change came in meanwhile; then it is held", () =>
    Effect.gen(function* () {
      const index = new CapabilityIndex(TTL, 100)
      let storeReads = 0
      const outcome = yield* Effect.gen(function* () {
        const gate = yield* Deferred.make<void>()
        const rows = heldReads(index, () =>
          Effect.sync(() => storeReads++).pipe(
            Effect.zipRight(Deferred.await(gate)),
            Effect.as(readOf(["r1"]).candidates)
          )
        )
        const first = yield* Effect.fork(rows("a", 0))
        const second = yield* Effect.fork(rows("a", 0))
        yield* Effect.yieldNow()
        const shared = storeReads
        index.apply(resourcesChanged(["r9"]))
        const third = yield* Effect.fork(rows("a", 0))
        yield* Effect.yieldNow()
        const afterChange = storeReads
        yield* Deferred.succeed(gate, undefined)
        const answers = yield* Fiber.join(Fiber.zip(Fiber.zip(first, second), third))
        yield* rows("a", yield* Clock.currentTimeMillis)
        return { shared, afterChange, answers: answers.flat().length, held: storeReads }
      })
      expect(outcome).toEqual({ shared: 1, afterChange: 2, answers: 3, held: 2 })
    })
  )
})
