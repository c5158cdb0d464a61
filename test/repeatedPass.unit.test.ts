import { describe, expect, test } from "bun:test"
import { Effect, Ref, TestClock, TestContext } from "effect"
import { repeatedPass } from "../src/lifecycle/repeatedPass.js"

describe("repeatedPass", () => {
  test("runs at once and every interval, through failures and defects, until the scope closes", async () => {
    const runs = await Effect.runPromise(
      Effect.gen(function* () {
        const count = yield* Ref.make(0)
        // Every pass but the first fails or dies: the schedule must go on regardless.
        const pass = Effect.flatMap(Ref.updateAndGet(count, (n) => n + 1), (n) =>
          n === 1 ? Effect.void : n % 2 === 0 ? Effect.fail("refused") : Effect.die("broken")
        )
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* repeatedPass(pass, "1 minute", "test pass failed")
            yield* TestClock.adjust("3 minutes")
          })
        )
        yield* TestClock.adjust("10 minutes")
        return yield* Ref.get(count)
      }).pipe(Effect.provide(TestContext.TestContext))
    )
    expect(runs).toBe(4)
  })
})
