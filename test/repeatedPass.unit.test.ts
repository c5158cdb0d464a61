import { describe, expect } from "bun:test"
import { Effect, Ref, TestClock } from "effect"
import { repeatedPass } from "../src/lifecycle/repeatedPass.js"
import { it } from "./support/effectTest.js"

describe("repeatedPass", () => {
  it.effect("runs at once and every interval, through failures and defects, until the scope closes", () =>
    Effect.gen(function* () {
      const count = yield* Ref.make(0)
      // Every pass but the first fails or dies: the schedule must go on regardless.
      const pass = Effect.flatMap(
        Ref.updateAndGet(count, (n) => n + 1),
        (n) => (n === 1 ? Effect.void : n % 2 === 0 ? Effect.fail("refused") : Effect.die("broken"))
      )
      yield* Effect.scoped(
        Effect.gen(function* () {
          yield* repeatedPass(pass, "1 minute", "test pass failed")
          yield* TestClock.adjust("3 minutes")
        })
      )
      yield* TestClock.adjust("10 minutes")
      expect(yield* Ref.get(count)).toBe(4)
    })
  )
})
