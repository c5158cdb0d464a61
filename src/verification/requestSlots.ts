import { Deferred, Effect, Exit, FiberId } from "effect"

/** A gate letting `n` effects run at once; `free` reads how many slots are open (for tests and metrics). */
export interface RequestSlots {
  readonly run: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly free: Effect.Effect<number>
}

/**
 * A gate letting `n` effects run at once, handing each freed slot to one waiter (first come, first
 * served). Effect's Semaphore wakes every waiter on each release; with a few hundred probes waiting,
 * that wake-up cost more than the probes.
 *
 * The wait is interruptible (a pass that is stopped returns at once), and the count stays exact:
 * a waiter interrupted before a slot reached it just leaves the line; one interrupted after a
 * release handed it a slot, but before it resumed, passes that slot on. Between taking a slot and
 * starting `effect` nothing can interrupt, so the slot is always given back when `effect` ends.
 */
export const requestSlots = (n: number): Effect.Effect<RequestSlots> =>
  Effect.sync(() => {
    let free = n
    const waiting: Array<Deferred.Deferred<void>> = []

    const release = Effect.sync(() => {
      const next = waiting.shift()
      if (next === undefined) free++
      else Deferred.unsafeDone(next, Exit.void)
    })

    const acquire = Effect.suspend(() => {
      if (free > 0) {
        free--
        return Effect.void
      }
      const turn = Deferred.unsafeMake<void>(FiberId.none)
      waiting.push(turn)
      return Deferred.await(turn).pipe(
        Effect.onInterrupt(() =>
          Effect.suspend(() => {
            const at = waiting.indexOf(turn)
            if (at === -1) return release
            waiting.splice(at, 1)
            return Effect.void
          })
        )
      )
    })

    return {
      run: (effect) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.zipRight(restore(acquire), Effect.ensuring(restore(effect), release))
        ),
      free: Effect.sync(() => free)
    }
  })
