import { describe, expect, test } from "bun:test"
import { Cause, Context, Effect, Exit, Option } from "effect"
import { makeTestLayer } from "./support/testLayer.js"

interface CounterShape {
  readonly add: (n: number) => Effect.Effect<number>
  readonly reset: (to: number) => Effect.Effect<void>
  readonly current: Effect.Effect<number>
}
class Counter extends Context.Tag("test/Counter")<Counter, CounterShape>() {}

const run = <A, E>(effect: Effect.Effect<A, E, Counter>, partial: Partial<CounterShape>) =>
  Effect.runPromiseExit(Effect.provide(effect, makeTestLayer(Counter)(partial)))

const defectMessage = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) ? Option.map(Cause.dieOption(exit.cause), (d) => (d as Error).message) : Option.none()

describe("makeTestLayer", () => {
  test("a stubbed method and a stubbed Effect member answer as given", async () => {
    const exit = await run(
      Effect.gen(function* () {
        const counter = yield* Counter
        return [yield* counter.add(2), yield* counter.current]
      }),
      { add: (n) => Effect.succeed(n + 40), current: Effect.succeed(7) }
    )
    expect(exit).toEqual(Exit.succeed([42, 7]))
  })

  test("an unstubbed method dies naming the service and the method", async () => {
    const exit = await run(Effect.flatMap(Counter, (c) => c.reset(0)), { add: (n) => Effect.succeed(n) })
    expect(defectMessage(exit)).toEqual(Option.some("test/Counter.reset was called but the test did not stub it"))
  })

  test("an unstubbed Effect member dies the same way", async () => {
    const exit = await run(Effect.flatMap(Counter, (c) => c.current), { add: (n) => Effect.succeed(n) })
    expect(defectMessage(exit)).toEqual(Option.some("test/Counter.current was called but the test did not stub it"))
  })

  test("an unstubbed member used with yield* dies, not hangs or succeeds", async () => {
    const exit = await run(
      Effect.gen(function* () {
        const counter = yield* Counter
        return yield* counter.current
      }),
      {}
    )
    expect(defectMessage(exit)).toEqual(Option.some("test/Counter.current was called but the test did not stub it"))
  })
})
