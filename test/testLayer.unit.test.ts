import { describe, expect } from "bun:test"
import { Cause, Context, Effect, Exit, Option } from "effect"
import { it } from "./support/effectTest.js"
import { makeTestLayer } from "./support/testLayer.js"

interface CounterShape {
  readonly add: (n: number) => Effect.Effect<number>
  readonly reset: (to: number) => Effect.Effect<void>
  readonly current: Effect.Effect<number>
}
class Counter extends Context.Tag("test/Counter")<Counter, CounterShape>() {}

/** How `effect` ended with `Counter` made of `partial`. */
const exitWith = <A, E>(effect: Effect.Effect<A, E, Counter>, partial: Partial<CounterShape>) =>
  Effect.exit(Effect.provide(effect, makeTestLayer(Counter)(partial)))

const defectMessage = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Option.map(Cause.dieOption(exit.cause), (d) => (d as Error).message) : Option.none()

describe("makeTestLayer", () => {
  it.effect("a stubbed method and a stubbed Effect member answer as given", () =>
    Effect.gen(function* () {
      const exit = yield* exitWith(
        Effect.gen(function* () {
          const counter = yield* Counter
          return [yield* counter.add(2), yield* counter.current]
        }),
        { add: (n) => Effect.succeed(n + 40), current: Effect.succeed(7) }
      )
      expect(exit).toEqual(Exit.succeed([42, 7]))
    })
  )

  it.effect("an unstubbed method dies naming the service and the method", () =>
    Effect.gen(function* () {
      const exit = yield* exitWith(
        Effect.flatMap(Counter, (c) => c.reset(0)),
        { add: (n) => Effect.succeed(n) }
      )
      expect(defectMessage(exit)).toEqual(Option.some("test/Counter.reset was called but the test did not stub it"))
    })
  )

  it.effect("an unstubbed Effect member dies the same way", () =>
    Effect.gen(function* () {
      const exit = yield* exitWith(
        Effect.flatMap(Counter, (c) => c.current),
        { add: (n) => Effect.succeed(n) }
      )
      expect(defectMessage(exit)).toEqual(Option.some("test/Counter.current was called but the test did not stub it"))
    })
  )

  it.effect("an unstubbed member used with yield* dies, not hangs or succeeds", () =>
    Effect.gen(function* () {
      const exit = yield* exitWith(
        Effect.gen(function* () {
          const counter = yield* Counter
          return yield* counter.current
        }),
        {}
      )
      expect(defectMessage(exit)).toEqual(Option.some("test/Counter.current was called but the test did not stub it"))
    })
  )
})
