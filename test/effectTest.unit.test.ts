import { describe, expect, test } from "bun:test"
import { Clock, Context, Data, Effect, Fiber, Layer, ManagedRuntime, Option, Ref, TestClock } from "effect"
import { EffectTestFailure, it, layer, runScoped, runWith } from "./support/effectTest.js"

class Refused extends Data.TaggedError("Refused")<{ readonly reason: string }> {}

class Resource extends Context.Tag("test/Resource")<Resource, { readonly opened: number }>() {}

/** What the suite below acquired and released, read by the tests after it. */
const events: Array<string> = []
const ResourceLive = Layer.scoped(
  Resource,
  Effect.acquireRelease(
    Effect.sync(() => {
      events.push("suite opened")
      return { opened: events.length }
    }),
    () => Effect.sync(() => events.push("suite closed"))
  )
)

layer(ResourceLive)("a suite built from a layer", (it) => {
  it.effect("its tests share one build of the layer", () =>
    Effect.gen(function* () {
      expect((yield* Resource).opened).toBe(1)
      yield* Effect.addFinalizer(() => Effect.sync(() => events.push("test scope closed")))
    })
  )

  it.live("a test's own scope is closed when it ends, the suite's is not", () =>
    Effect.gen(function* () {
      expect((yield* Resource).opened).toBe(1)
      expect(events).toEqual(["suite opened", "test scope closed"])
    })
  )
})

test("the suite's scope is closed after its last test", () => {
  expect(events).toEqual(["suite opened", "test scope closed", "suite closed"])
})

describe("it", () => {
  it.effect("it.effect runs on the TestClock: a day passes only when the test moves it", () =>
    Effect.gen(function* () {
      const woke = yield* Ref.make(false)
      const sleeper = yield* Effect.fork(Effect.zipRight(Effect.sleep("1 day"), Ref.set(woke, true)))
      yield* TestClock.adjust("23 hours")
      expect(yield* Ref.get(woke)).toBe(false)
      yield* TestClock.adjust("1 hour")
      yield* Fiber.join(sleeper)
      expect(yield* Ref.get(woke)).toBe(true)
    })
  )

  it.live("it.live runs on the real clock", () =>
    Effect.gen(function* () {
      expect(Math.abs((yield* Clock.currentTimeMillis) - Date.now())).toBeLessThan(60_000)
    })
  )

  it.effect.fails("a failing effect fails its test", () => Effect.fail(new Refused({ reason: "over budget" })))

  it.live.fails("a defect fails its test", () => Effect.die(new Error("broken invariant")))

  it.effect.fails("a failed expectation inside the effect fails its test", () => Effect.sync(() => expect(1).toBe(2)))
})

describe("runScoped", () => {
  const runtime = ManagedRuntime.make(Layer.empty)

  test("a failure rejects with the whole Cause, every failure and defect in it named", async () => {
    const failing = Effect.all(
      [Effect.fail(new Refused({ reason: "over budget" })), Effect.die(new Error("broken invariant"))],
      {
        concurrency: 2
      }
    )
    const rejected = await runScoped(runtime, failing).then(
      () => Option.none(),
      (error: unknown) => Option.some(error)
    )
    const error = Option.getOrThrow(rejected)
    expect(error).toBeInstanceOf(EffectTestFailure)
    expect((error as EffectTestFailure).message).toContain("Refused")
    expect((error as EffectTestFailure).message).toContain("over budget")
    expect((error as EffectTestFailure).message).toContain("broken invariant")
  })

  test("the test's scope is closed whether it succeeds or fails", async () => {
    const closed: Array<string> = []
    const body = (outcome: Effect.Effect<void, Refused>) =>
      Effect.zipRight(
        Effect.addFinalizer((exit) => Effect.sync(() => closed.push(exit._tag))),
        outcome
      )
    await runScoped(runtime, body(Effect.void))
    await runScoped(runtime, body(Effect.fail(new Refused({ reason: "no" })))).catch(() => undefined)
    expect(closed).toEqual(["Success", "Failure"])
  })
})

const T0 = Date.UTC(2020, 0, 1)

layer(Layer.empty, { testClock: "suite" })("a suite on one TestClock", (it) => {
  it.effect("a time one test sets", () => TestClock.setTime(T0))

  it.effect("holds in the next", () =>
    Effect.gen(function* () {
      expect(yield* Clock.currentTimeMillis).toBe(T0)
    })
  )

  it.live("and it.live still reads the real clock", () =>
    Effect.gen(function* () {
      expect(Math.abs((yield* Clock.currentTimeMillis) - Date.now())).toBeLessThan(60_000)
    })
  )
})

describe("each it.effect outside such a suite", () => {
  it.effect("starts on its own TestClock at zero", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
    })
  )

  it.effect("so no time leaks from the test before", () =>
    Effect.gen(function* () {
      expect(yield* Clock.currentTimeMillis).toBe(0)
    })
  )
})

describe("runWith", () => {
  test("runs once on a layer built for it, released after, whether the effect succeeds or fails", async () => {
    const log: Array<string> = []
    const counted = Layer.scoped(
      Resource,
      Effect.acquireRelease(
        Effect.sync(() => {
          log.push("opened")
          return { opened: log.length }
        }),
        () => Effect.sync(() => log.push("closed"))
      )
    )
    expect(
      await runWith(
        counted,
        Effect.map(Resource, (r) => r.opened)
      )
    ).toBe(1)
    const failed = await runWith(counted, Effect.fail(new Refused({ reason: "seed refused" }))).catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(EffectTestFailure)
    expect(log).toEqual(["opened", "closed", "opened", "closed"])
  })
})
