import { describe, expect } from "bun:test"
import { Cause, Effect, Fiber, FiberId, Logger, LogLevel } from "effect"
import { logFailure } from "../src/lifecycle/interruption.js"
import { it } from "./support/effectTest.js"

/** The levels `effect` logged, with the logger capturing them and every level enabled. */
const levels = (effect: Effect.Effect<unknown>) => {
  const seen: Array<string> = []
  const capture = Logger.make(({ logLevel }) => void seen.push(logLevel.label))
  return effect.pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, capture)),
    Logger.withMinimumLogLevel(LogLevel.All),
    Effect.as(seen)
  )
}

describe("logFailure", () => {
  it.effect("a failure or a defect is an ERROR; an interruption alone (the process stopping) only DEBUG", () =>
    Effect.gen(function* () {
      expect(yield* levels(logFailure("x")(Cause.fail("boom")))).toEqual(["ERROR"])
      expect(yield* levels(logFailure("x")(Cause.die(new Error("bug"))))).toEqual(["ERROR"])
      expect(yield* levels(logFailure("x")(Cause.interrupt(FiberId.none)))).toEqual(["DEBUG"])
    })
  )

  it.effect("work whose fiber a closing scope interrupted, caught by a catch-all, is not an ERROR", () =>
    Effect.gen(function* () {
      const interruptedWork = Effect.gen(function* () {
        const fiber = yield* Effect.fork(Effect.never)
        yield* Fiber.interrupt(fiber)
        return yield* Fiber.join(fiber)
      })
      expect(yield* levels(interruptedWork.pipe(Effect.catchAllCause(logFailure("pass failed"))))).toEqual(["DEBUG"])
    })
  )
})
