import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Clock, Duration, Effect, Exit, Layer, Option, Queue, Ref, Scope, TestClock, TestContext } from "effect"
import { AppConfig } from "../src/config.js"
import { ObservationsRepo, observationCursor } from "../src/store/ObservationsRepo.js"
import { ResourcesRepo } from "../src/store/ResourcesRepo.js"
import { TransitionsRepo } from "../src/store/TransitionsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { type CycleReport, Prober } from "../src/verification/Prober.js"
import { ProbeSchedulerLive } from "../src/verification/ProbeScheduler.js"
import { observation, timedOut } from "./fixtures/observations.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"

let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

const report: CycleReport = { startedAt: "", durationMs: 0, probed: 0, healthy: 0, unrecorded: 0, pruned: 0, prunedUnlisted: 0 }

/** The scheduler over a stand-in Prober whose cycle is `cycle`: only the schedule is under test. */
const scheduler = (cycle: Effect.Effect<void>, probes = { intervalSeconds: 60, jitter: 0.1 }) =>
  ProbeSchedulerLive.pipe(
    Layer.provide(
      Layer.succeed(Prober, {
        probeResource: () => Effect.die("not used"),
        probeUrl: () => Effect.die("not used"),
        observeNewUrl: () => Effect.die("not used"),
        adopt: () => Effect.die("not used"),
        runCycle: Effect.as(cycle, report)
      })
    ),
    Layer.provide(Layer.succeed(AppConfig, verificationConfig(probes)))
  )

const runTest = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.provide(effect, TestContext.TestContext))

describe("probe schedule (TestClock)", () => {
  test("a cycle at start-up, then one per interval plus at most the jitter", async () => {
    const starts = await runTest(
      Effect.gen(function* () {
        const started = yield* Queue.unbounded<number>()
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(scheduler(Effect.flatMap(Clock.currentTimeMillis, (ms) => Queue.offer(started, ms))), scope)
        const first = yield* Queue.take(started)
        yield* TestClock.adjust(Duration.seconds(59))
        const early = yield* Queue.size(started)
        yield* TestClock.adjust(Duration.seconds(7))
        const second = yield* Queue.take(started)
        yield* TestClock.adjust(Duration.seconds(66))
        const third = yield* Queue.take(started)
        yield* Scope.close(scope, Exit.void)
        return { first, early, second, third }
      })
    )
    expect(starts.first).toBe(0)
    expect(starts.early).toBe(0)
    expect(starts.second).toBeGreaterThanOrEqual(60_000)
    expect(starts.second).toBeLessThanOrEqual(66_000)
    expect(starts.third - starts.second).toBeGreaterThanOrEqual(60_000)
    expect(starts.third - starts.second).toBeLessThanOrEqual(66_000)
  })

  test("a cycle longer than the interval is never overlapped: the next starts an interval after it ends", async () => {
    const out = await runTest(
      Effect.gen(function* () {
        const started = yield* Queue.unbounded<number>()
        const running = yield* Ref.make(0)
        const most = yield* Ref.make(0)
        const count = yield* Ref.make(0)
        const cycle = Effect.gen(function* () {
          const n = yield* Ref.updateAndGet(running, (x) => x + 1)
          yield* Ref.update(most, (m) => Math.max(m, n))
          yield* Queue.offer(started, yield* Clock.currentTimeMillis)
          if ((yield* Ref.getAndUpdate(count, (c) => c + 1)) === 0) yield* Effect.sleep(Duration.seconds(200))
          yield* Ref.update(running, (x) => x - 1)
        })
        const scope = yield* Scope.make()
        yield* Layer.buildWithScope(scheduler(cycle), scope)
        yield* Queue.take(started)
        yield* TestClock.adjust(Duration.seconds(150))
        const duringLongCycle = yield* Queue.size(started)
        yield* TestClock.adjust(Duration.seconds(50 + 66))
        const second = yield* Queue.take(started)
        yield* Scope.close(scope, Exit.void)
        return { duringLongCycle, second, most: yield* Ref.get(most) }
      })
    )
    expect(out.duringLongCycle).toBe(0)
    expect(out.second).toBeGreaterThanOrEqual(260_000)
    expect(out.most).toBe(1)
  })

  test("closing the layer's scope interrupts the cycle in flight", async () => {
    const interrupted = await runTest(
      Effect.gen(function* () {
        const started = yield* Queue.unbounded<number>()
        const flag = yield* Ref.make(false)
        const scope = yield* Scope.make()
        const hanging = Effect.zipRight(Queue.offer(started, 0), Effect.never).pipe(Effect.onInterrupt(() => Ref.set(flag, true)))
        yield* Layer.buildWithScope(scheduler(hanging), scope)
        yield* Queue.take(started)
        yield* Scope.close(scope, Exit.void)
        return yield* Ref.get(flag)
      })
    )
    expect(interrupted).toBe(true)
  })
})

const T0 = 1_700_000_000_000
const MINUTE = 60_000

/** The real verification stack on an in-memory store, its clock a TestClock set to T0, with `r1` in the catalog. */
const withStore = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof verificationStack>>>, url = "http://127.0.0.1:1/unused") => {
  const config = verificationConfig({ trustedOrigins: [fixture.origin] })
  return runTest(
    Effect.gen(function* () {
      yield* TestClock.setTime(T0)
      yield* (yield* ResourcesRepo).upsertCatalog([entry("r1", url)])
      return yield* effect
    }).pipe(Effect.provide(verificationStack(config)))
  )
}

/** Records an observation of `r1` stamped with the current (test) time. */
const recordNow = (make: (ms: number) => ReturnType<typeof observation>) =>
  Effect.gen(function* () {
    const ms = yield* Clock.currentTimeMillis
    const record = Option.getOrThrow(yield* (yield* ResourcesRepo).get("r1"))
    return yield* (yield* EvidenceRecorder).recordObservation(record, make(ms))
  })

describe("metric windows and confidence over time (TestClock, real store)", () => {
  test("confidence grows with probes, halves per half-life, and is 0 once the newest probe left the window", async () => {
    const out = await withStore(
      Effect.gen(function* () {
        const reader = yield* EvidenceReader
        const confidenceAfter = [] as Array<number>
        for (let i = 0; i < 12; i++) {
          if (i > 0) yield* TestClock.adjust(Duration.minutes(5))
          yield* recordNow((ms) => observation(ms))
          confidenceAfter.push((yield* reader.forResource("r1")).metrics.confidence)
        }
        const fresh = yield* reader.forResource("r1")
        yield* TestClock.adjust(Duration.hours(1))
        const hourLater = yield* reader.forResource("r1")
        yield* TestClock.adjust(Duration.hours(23).pipe(Duration.sum(Duration.millis(1))))
        const stale = yield* reader.forResource("r1")
        // A new probe after the silence sees only itself in the window.
        yield* recordNow((ms) => timedOut(ms))
        const after = yield* reader.forResource("r1")
        const transitions = yield* (yield* TransitionsRepo).recent("r1", 10)
        return { confidenceAfter, fresh, hourLater, stale, after, transitions }
      })
    )
    for (let i = 1; i < out.confidenceAfter.length; i++) {
      expect(out.confidenceAfter[i]!).toBeGreaterThan(out.confidenceAfter[i - 1]!)
    }
    expect(out.fresh.metrics).toMatchObject({ observationCount: 12, availability24h: 1, paymentInterfaceSuccessRate: 1 })
    expect(out.fresh.metrics.confidence).toBe(Math.round((1 - Math.exp(-1)) * 1000) / 1000)
    expect(out.hourLater.metrics.confidence).toBeCloseTo(out.fresh.metrics.confidence / 2, 3)
    expect(out.stale.metrics).toMatchObject({ confidence: 0, observationCount: 0, availability24h: 0 })
    expect(out.stale.metrics.lastVerified).toBe(new Date(T0 + 55 * MINUTE).toISOString())
    expect(out.stale.status).toBe("PAYMENT_VERIFIED")
    expect(out.after.metrics).toMatchObject({ observationCount: 1, availability24h: 0 })
    expect(out.after).toMatchObject({ status: "VALIDATING", verificationLevel: 0 })
    expect(out.transitions[0]).toMatchObject({ from: "PAYMENT_VERIFIED", to: "VALIDATING", fromLevel: 2, toLevel: 0 })
  })

  test("observations page newest first by id or by time, and a cycle prunes those past retention", async () => {
    const out = await withStore(
      Effect.gen(function* () {
        const repo = yield* ObservationsRepo
        const ids = [] as Array<string>
        for (let i = 0; i < 5; i++) {
          if (i > 0) yield* TestClock.adjust(Duration.seconds(1))
          const ms = yield* Clock.currentTimeMillis
          const o = observation(ms)
          ids.push(o.id)
          yield* recordNow(() => o)
        }
        const first = yield* repo.page("r1", 2, null)
        const second = yield* repo.page("r1", 2, first.nextBefore)
        const last = yield* repo.page("r1", 2, second.nextBefore)
        const byTime = yield* repo.page("r1", 10, observationCursor(new Date(T0 + 2000).toISOString()))
        yield* TestClock.adjust(Duration.days(8))
        const cycle = yield* (yield* Prober).runCycle
        const remaining = yield* repo.page("r1", 10, null)
        return { ids, first, second, last, byTime, cycle, remaining }
      }),
      fixture.url("/paid")
    )
    const idsOf = (page: { observations: ReadonlyArray<{ id: string }> }): Array<string | undefined> =>
      page.observations.map((o) => o.id)
    expect(idsOf(out.first)).toEqual([out.ids[4], out.ids[3]])
    expect(out.first.nextBefore).toBe(out.ids[3]!)
    expect(idsOf(out.second)).toEqual([out.ids[2], out.ids[1]])
    expect(idsOf(out.last)).toEqual([out.ids[0]])
    expect(out.last.nextBefore).toBeNull()
    expect(idsOf(out.byTime)).toEqual([out.ids[1], out.ids[0]])
    expect(out.cycle).toMatchObject({ probed: 1, healthy: 1, pruned: 5, unrecorded: 0 })
    expect(out.remaining.observations.map((o) => o.outcome)).toEqual(["healthy"])
    expect(observationCursor("yesterday")).toBeNull()
    expect(observationCursor("obs_1")).toBeNull()
  })
})
