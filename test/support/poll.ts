import { Effect, Runtime } from "effect"

export interface PollOptions {
  /** Give up after this long (real time); the default suits a probe cycle or a process start. */
  readonly timeoutMs?: number
  /** Real-time pause between reads. */
  readonly everyMs?: number
}

/**
 * For loopback I/O to land (a fixture seeing a call, a first /supported poll answering): quick
 * reads, a few seconds at most, well inside bun's default 5 s per test.
 */
export const LOOPBACK: PollOptions = { timeoutMs: 3_000, everyMs: 10 }

/**
 * The one wait loop of the suite. Reads until `check` holds, every `everyMs`, for at most
 * `timeoutMs`; then fails naming `what` and the last value read, so a timeout says how far the
 * system got. It waits in real time (Bun.sleep, Date.now) even inside a program on a TestClock:
 * what it waits for is loopback I/O or another process, which the TestClock does not move.
 */
export const pollUntil = async <A>(
  what: string,
  read: () => Promise<A>,
  check: (value: A) => boolean,
  { timeoutMs = 20_000, everyMs = 100 }: PollOptions = {}
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let last: A | undefined
  for (;;) {
    last = await read()
    if (check(last)) return last
    if (Date.now() >= deadline)
      throw new Error(`${what}: not reached within ${timeoutMs} ms; last seen ${JSON.stringify(last)}`)
    await Bun.sleep(everyMs)
  }
}

/**
 * `pollUntil` for a program: `read` runs with the caller's services (its TestClock included),
 * the pauses between reads are real time. A timeout is a defect naming `what`.
 */
export const pollUntilEffect = <A, R>(
  what: string,
  read: Effect.Effect<A, never, R>,
  check: (value: A) => boolean,
  options?: PollOptions
): Effect.Effect<A, never, R> =>
  Effect.flatMap(Effect.runtime<R>(), (runtime) =>
    Effect.promise(() => pollUntil(what, () => Runtime.runPromise(runtime)(read), check, options))
  )
