import { Context, Deferred, Effect, Exit, Layer, Queue } from "effect"
import type { RecordedObservation } from "../domain/observations.js"
import type { ResourceRecord } from "../domain/resources.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { StoreTransactions } from "../store/StoreTransactions.js"
import type { ProbeBookkeeping } from "./EvidenceRecorder.js"
import { makeWriteBatch, type PendingObservation } from "./observationBatch.js"
import { makeStandingWrites } from "./standingWrites.js"
import type { Standing } from "./status.js"

/** Observations written per transaction at most: a few statements for many probes, yet short enough that a settle's reservation waits little. */
export const BATCH = 256
/**
 * How long the writer lets a batch gather after its first observation. A batch costs the same
 * statements whatever its size, and bun:sqlite blocks the event loop while they run, so without a
 * pause no other probe could finish meanwhile and batches would stay small; it is what one
 * probe's answer waits at most for it.
 */
const GATHER_MS = 10

export interface ObservationWriterShape {
  /**
   * Queues an observation for the writer's next batch (observationBatch.ts), with its
   * bookkeeping in that batch's transaction; resolves once the batch committed, with the
   * resource's new standing (null for a resource with no metrics row), or fails with the batch's
   * cause.
   */
  readonly write: (
    record: ResourceRecord,
    observation: RecordedObservation,
    bookkeeping: ProbeBookkeeping
  ) => Effect.Effect<Standing | null>
  /**
   * Runs `effect` in a transaction while no batch is being written: a refresh reads a resource's
   * window and writes the derived rows, and one writer at a time keeps a probe batch, a
   * settlement's evidence and an operator's change from interleaving them.
   */
  readonly serialized: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

/**
 * The batching writer of probe observations: one fiber, owned by the layer's scope, that takes
 * whatever probes queued up (at most BATCH) and writes them in one transaction, so a cycle's
 * statements are per batch, not per probe, and a busy writer gets larger batches.
 */
export class ObservationWriter extends Context.Tag("sextant/ObservationWriter")<
  ObservationWriter,
  ObservationWriterShape
>() {
  static readonly Live = Layer.scoped(
    ObservationWriter,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const { transaction } = yield* StoreTransactions
  const writeBatch = yield* makeWriteBatch(yield* makeStandingWrites)
  const lock = yield* Effect.makeSemaphore(1)
  const queue = yield* Queue.unbounded<PendingObservation>()

  // A failed batch fails each of its probes with the cause.
  const writer = Effect.gen(function* () {
    const first = yield* Queue.take(queue)
    // Real time, not the Clock: a test's TestClock must not hold the writer.
    if ((yield* Queue.size(queue)) < BATCH - 1)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, GATHER_MS)))
    const items = [first, ...(yield* Queue.takeUpTo(queue, BATCH - 1))]
    // Relaxed: a batch lost to a power cut is probed again, and an fsync per batch would block the event loop.
    const exit = yield* Effect.exit(lock.withPermits(1)(commitWithoutFlush(transaction(writeBatch(items)))))
    yield* Exit.match(exit, {
      onFailure: (cause) => Effect.forEach(items, (p) => Deferred.failCause(p.done, cause), { discard: true }),
      onSuccess: (results) =>
        Effect.forEach(items, (p, i) => Deferred.succeed(p.done, results[i] ?? null), { discard: true })
    })
  }).pipe(Effect.forever, Effect.withTracerEnabled(false))
  yield* Effect.forkScoped(writer)

  return {
    write: (record, observation, bookkeeping) =>
      Effect.gen(function* () {
        const done = yield* Deferred.make<Standing | null>()
        yield* Queue.offer(queue, { record, observation, bookkeeping, done })
        return yield* Deferred.await(done)
      }),
    // The transaction's generic error and context pass through unchanged, which tsc checks; the
    // language service cannot follow the generic `transaction` here.
    // @effect-diagnostics-next-line missingEffectContext:off missingEffectError:off
    serialized: (effect) => lock.withPermits(1)(transaction(effect))
  } satisfies ObservationWriterShape
})
