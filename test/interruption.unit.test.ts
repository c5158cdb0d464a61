import { describe, expect, test } from "bun:test"
import { Cause, Effect, Fiber, FiberId, Logger, LogLevel } from "effect"
import { logFailure } from "../src/lifecycle/interruption.js"

/** The levels `effect` logged, with the logger capturing them and every level enabled. */
const levels = async (effect: Effect.Effect<unknown>) => {
  const seen: Array<string> = []
  const capture = Logger.make(({ logLevel }) => void seen.push(logLevel.label))
  await Effect.runPromise(effect.pipe(Effect.provide(Logger.replace(Logger.defaultLogger, capture)), Logger.withMinimumLogLevel(LogLevel.All)))
  return seen
}

describe("logFailure", () => {
  test("a failure or a defect is an ERROR; an interruption alone (the process stopping) only DEBUG", async () => {
    expect(await levels(logFailure("x")(Cause.fail("boom")))).toEqual(["ERROR"])
    expect(await levels(logFailure("x")(Cause.die(new Error("bug"))))).toEqual(["ERROR"])
    expect(await levels(logFailure("x")(Cause.interrupt(FiberId.none)))).toEqual(["DEBUG"])
  })

  test("work whose fiber a closing scope interrupted, caught by a catch-all, is not an ERROR", async () => {
    const interruptedWork = Effect.gen(function* () {
      const fiber = yield* Effect.fork(Effect.never)
      yield* Fiber.interrupt(fiber)
      return yield* Fiber.join(fiber)
    })
    expect(await levels(interruptedWork.pipe(Effect.catchAllCause(logFailure("pass failed"))))).toEqual(["DEBUG"])
  })
})
