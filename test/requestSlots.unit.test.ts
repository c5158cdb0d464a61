import { describe, expect, test } from "bun:test"
import { Deferred, Effect, Fiber } from "effect"
import fc from "fast-check"
import { type RequestSlots, requestSlots } from "../src/verification/requestSlots.js"
import { it } from "./support/effectTest.js"

/** One slot, held by a fiber until `hold` completes, and `waiter` forked to wait for it behind. */
const heldSlotWith = <A>(waiter: (slots: RequestSlots) => Effect.Effect<A>) =>
  Effect.gen(function* () {
    const slots = yield* requestSlots(1)
    const hold = yield* Deferred.make<void>()
    const holder = yield* Effect.fork(slots.run(Deferred.await(hold)))
    yield* Effect.yieldNow()
    const waiting = yield* Effect.fork(waiter(slots))
    yield* Effect.yieldNow()
    return { slots, hold, holder, waiting }
  })

describe("request slots", () => {
  it.live("a fiber waiting for a slot is interrupted promptly and the slot count stays intact", () =>
    Effect.gen(function* () {
      const result = yield* Effect.gen(function* () {
        const ran = { waiter: false }
        const {
          slots,
          hold,
          holder,
          waiting: waiter
        } = yield* heldSlotWith((slots) =>
          slots.run(
            Effect.sync(() => {
              ran.waiter = true
            })
          )
        )
        const started = performance.now()
        yield* Fiber.interrupt(waiter)
        const interruptMs = performance.now() - started
        const whileHeld = yield* slots.free
        yield* Deferred.succeed(hold, undefined)
        yield* Fiber.join(holder)
        const afterRelease = yield* slots.free
        // The slot the interrupted waiter never got is free for the next caller at once.
        const next = yield* slots.run(Effect.succeed("next")).pipe(Effect.timeout("1 second"))
        return { interruptMs, whileHeld, afterRelease, next, waiterRan: ran.waiter }
      })
      expect(result.interruptMs).toBeLessThan(100)
      expect(result.whileHeld).toBe(0)
      expect(result.afterRelease).toBe(1)
      expect(result.next).toBe("next")
      expect(result.waiterRan).toBe(false)
    })
  )

  it.live("a waiter interrupted right after a release handed it the slot passes the slot on", () =>
    Effect.gen(function* () {
      const free = yield* Effect.gen(function* () {
        const { slots, hold, holder, waiting: waiter } = yield* heldSlotWith((slots) => slots.run(Effect.never))
        // The holder's release hands the slot to the waiter; the waiter is interrupted before it resumes.
        yield* Deferred.succeed(hold, undefined)
        yield* Fiber.join(holder)
        yield* Fiber.interrupt(waiter)
        return yield* slots.free
      })
      expect(free).toBe(1)
    })
  )

  test("property: whatever is interrupted, at most n run at once and every slot comes back", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(
          fc.record({
            work: fc.integer({ min: 0, max: 3 }),
            interruptAfter: fc.option(fc.integer({ min: 0, max: 4 }))
          }),
          {
            minLength: 1,
            maxLength: 30
          }
        ),
        async (n, jobs) => {
          const { free, peak } = await it.run(
            Effect.gen(function* () {
              const slots = yield* requestSlots(n)
              let running = 0
              let peak = 0
              const job = (work: number) =>
                Effect.acquireUseRelease(
                  Effect.sync(() => {
                    running++
                    peak = Math.max(peak, running)
                  }),
                  () => Effect.repeatN(Effect.yieldNow(), work),
                  () => Effect.sync(() => void running--)
                )
              const fibers = yield* Effect.forEach(jobs, ({ work }) => Effect.fork(slots.run(job(work))))
              yield* Effect.forEach(
                jobs,
                ({ interruptAfter }, i) =>
                  interruptAfter === null
                    ? Effect.void
                    : Effect.zipRight(Effect.repeatN(Effect.yieldNow(), interruptAfter), Fiber.interrupt(fibers[i]!)),
                { concurrency: "unbounded" }
              )
              yield* Effect.forEach(fibers, (f) => Effect.exit(Fiber.join(f)))
              return { free: yield* slots.free, peak }
            })
          )
          expect(peak).toBeLessThanOrEqual(n)
          expect(free).toBe(n)
        }
      ),
      { numRuns: 200 }
    )
  })
})
