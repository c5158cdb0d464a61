/**
 * The one way a test runs an Effect: `it.effect` / `it.live` for a single test and `layer(L)(name, it => ...)`
 * for a suite sharing services, in the manner of `@effect/vitest`, which only hooks into vitest. Bun's
 * runner has no such package, so this is the small part of it the suites use.
 */
import { afterAll, describe, test } from "bun:test"
import {
  Cause,
  Chunk,
  Effect,
  Exit,
  Inspectable,
  Layer,
  ManagedRuntime,
  Runtime,
  type Scope,
  TestContext,
  TestServices
} from "effect"

/** A test body: an Effect, or a function making one (so each run starts fresh). */
export type TestBody<A, E, R> = Effect.Effect<A, E, R> | (() => Effect.Effect<A, E, R>)

type Register = (name: string, fn: () => Promise<unknown>, timeout?: number) => void

/** What a test sees: its own scope (closed when it ends) and, for `it.effect`, the TestClock. */
export interface Tester<R> {
  <A, E>(name: string, body: TestBody<A, E, R | Scope.Scope>, timeout?: number): void
  /** The test passes only if the effect fails: for showing that a rule refuses. */
  readonly fails: <A, E>(name: string, body: TestBody<A, E, R | Scope.Scope>, timeout?: number) => void
}

export interface Methods<R> {
  /** Runs with the TestClock (and the other test services): time moves only by `TestClock.adjust`. */
  readonly effect: Tester<R | TestServices.TestServices>
  /** Runs with the real clock: for effects that wait on real I/O (a server, a process, a timeout). */
  readonly live: Tester<R>
  /** Runs an effect from a plain async test (one that mostly awaits non-Effect code), failing with its Cause. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, R | Scope.Scope>) => Promise<A>
}

/**
 * The error a failed test throws: the whole Cause, not just its first failure, so a defect's trace
 * shows; then each typed failure's fields, which `Cause.pretty` leaves out of a tagged error with no message.
 */
export class EffectTestFailure extends Error {
  constructor(readonly failure: Cause.Cause<unknown>) {
    const fields = Chunk.toReadonlyArray(Cause.failures(failure)).map((error) => Inspectable.format(error))
    super([Cause.pretty(failure, { renderErrorCause: true }), ...fields].join("\n"))
    this.name = "EffectTestFailure"
  }
}

const toEffect = <A, E, R>(body: TestBody<A, E, R>) =>
  Effect.suspend(() => (typeof body === "function" ? body() : body))

/**
 * Runs `effect` in its own scope on `runtime`; a failure (of the test or of building the layer)
 * rejects with the Cause. The runtime is built first and the effect run on it as `Effect.runPromise`
 * runs one: run inside the build instead, its forked fibers are scheduled a turn later.
 */
export const runScoped = async <A, E, R, ER>(
  runtime: ManagedRuntime.ManagedRuntime<R, ER>,
  effect: Effect.Effect<A, E, R | Scope.Scope>
) => {
  const built = await runtime.runPromiseExit(Effect.runtime<R>())
  if (Exit.isFailure(built)) throw new EffectTestFailure(built.cause)
  const exit = await Runtime.runPromiseExit(built.value, Effect.scoped(effect))
  if (Exit.isFailure(exit)) throw new EffectTestFailure(exit.cause)
  return exit.value
}

/**
 * Runs `effect` once on `layer`, built for it and released after: for seeding a store before a
 * suite starts its server (a `beforeAll`), where no test is running yet.
 */
export const runWith = async <A, E, R, ER>(layer: Layer.Layer<R, ER>, effect: Effect.Effect<A, E, R | Scope.Scope>) => {
  const runtime = ManagedRuntime.make(layer)
  try {
    return await runScoped(runtime, effect)
  } finally {
    await runtime.dispose()
  }
}

const tester = <R, ER, RT>(
  runtime: ManagedRuntime.ManagedRuntime<R, ER>,
  around: <A, E>(effect: Effect.Effect<A, E, RT | Scope.Scope>) => Effect.Effect<A, E, R | Scope.Scope>
): Tester<RT> => {
  const register =
    (to: Register) =>
    <A, E>(name: string, body: TestBody<A, E, RT | Scope.Scope>, timeout?: number) =>
      to(name, () => runScoped(runtime, around(toEffect(body))), timeout)
  return Object.assign(register(test), { fails: register(test.failing) })
}

// The tester's generic error passes through unchanged (tsc checks it); the language service cannot
// follow a generic `E` through the tester's callbacks.
// @effect-diagnostics missingEffectError:off
const methods = <R, ER>(runtime: ManagedRuntime.ManagedRuntime<R, ER>, suiteClock: boolean): Methods<R> => ({
  // In a suite on one TestClock the runtime holds the test services, which the types do not see.
  effect: tester(runtime, (effect) =>
    suiteClock
      ? (effect as Effect.Effect<
          Effect.Effect.Success<typeof effect>,
          Effect.Effect.Error<typeof effect>,
          R | Scope.Scope
        >)
      : Effect.provide(effect, TestContext.TestContext)
  ),
  live: tester(runtime, (effect) => (suiteClock ? TestServices.provideLive(effect) : effect)),
  run: (effect) => runScoped(runtime, effect)
})
// @effect-diagnostics missingEffectError:error

/** Tests needing no service but their own scope. */
export const it: Methods<never> = methods(ManagedRuntime.make(Layer.empty), false)

export interface SuiteOptions {
  /**
   * `"suite"`: one TestClock for the whole suite, so a time one test sets holds in the next. The
   * layer is still built on the real clock (a service that waits while starting would otherwise
   * wait for ever); what the tests run reads the TestClock. `"test"` (the default): each `it.effect`
   * starts on a fresh TestClock.
   */
  readonly testClock?: "suite" | "test"
}

/**
 * A suite whose tests share the services of `layer`: built once, on the first test that runs, and
 * released (its scope closed: servers stopped, files closed) after the suite's last test.
 */
export const layer =
  <R, E>(layer: Layer.Layer<R, E>, options: SuiteOptions = {}) =>
  (name: string, body: (it: Methods<R>) => void) =>
    describe(name, () => {
      const suiteClock = options.testClock === "suite"
      const runtime = ManagedRuntime.make(suiteClock ? Layer.merge(layer, TestContext.TestContext) : layer)
      afterAll(() => runtime.dispose())
      body(methods(runtime, suiteClock))
    })
