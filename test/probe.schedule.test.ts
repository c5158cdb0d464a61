import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Exit, Layer, Option, Queue, Ref, Scope, TestClock } from "effect"
import fc from "fast-check"
import { AppConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ObservationsRepo, observationCursor } from "../src/store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { TransitionsRepo } from "../src/store/TransitionsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { Prober } from "../src/verification/Prober.js"
import { ProbeSchedulerLive } from "../src/verification/ProbeScheduler.js"
import { nextDue, phaseOf } from "../src/verification/probeSlots.js"
import { observation, timedOut } from "./fixtures/observations.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { makeTestLayer } from "./support/testLayer.js"

let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

/** The scheduler over a stand-in Prober whose trusted lane's `runDue` is `due`: only the loop is under test. */
const scheduler = (due: Effect.Effect<number>, upkeep: Effect.Effect<void> = Effect.void) =>
  ProbeSchedulerLive.pipe(
    Layer.provide(
      makeTestLayer(Prober)({
        prune: Effect.as(upkeep, { pruned: 0, prunedUnlisted: 0, retired: 0 }),
        syncSchedule: Effect.as(upkeep, { added: 0, removed: 0 }),
        // The trusted lane's loop is under test; the open lane's finds nothing due.
        runDue: (_owner, _limit, lane) => (lane === "open" ? Effect.succeed(0) : due)
      })
    ),
    Layer.provide(Layer.succeed(AppConfig, verificationConfig({ intervalSeconds: 60, concurrency: 2 })))
  )

describe("probe slots (pure)", () => {
  const interval = 300_000
  test("on schedule, a resource's probes are exactly one interval apart, in its own phase", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.integer({ min: 0, max: interval / 2 - 1 }),
        (id, start, lag) => {
          const first = nextDue(id, start, interval)
          expect(first - start).toBeGreaterThanOrEqual(interval / 2)
          expect(first - start).toBeLessThan(interval * 1.5)
          expect(first % interval).toBe(phaseOf(id, interval))
          // Probed up to half an interval late, the next slot is still exactly one interval on.
          expect(nextDue(id, first + lag, interval)).toBe(first + interval)
        }
      )
    )
  })

  test("phases spread a catalog evenly over the interval", () => {
    const slots = new Array(10).fill(0)
    for (let i = 0; i < 10_000; i++) slots[Math.floor((phaseOf(`resource-${i}`, interval) / interval) * 10)]++
    for (const n of slots) expect(Math.abs(n - 1000)).toBeLessThan(150)
  })
})

describe("probe loop (TestClock)", () => {
  it.effect(
    "upkeep runs at start and once per interval; an idle loop claims once per tick, a full claim at once again",
    () =>
      Effect.gen(function* () {
        const out = yield* Effect.gen(function* () {
          const claims = yield* Ref.make(0)
          const upkeeps = yield* Ref.make(0)
          // The first two claims come back full (limit = concurrency x 4 = 8), then nothing is due.
          const due = Effect.map(
            Ref.getAndUpdate(claims, (n) => n + 1),
            (n) => (n < 2 ? 8 : 0)
          )
          const scope = yield* Scope.make()
          yield* Layer.buildWithScope(
            scheduler(
              due,
              Ref.update(upkeeps, (n) => n + 1)
            ),
            scope
          )
          yield* TestClock.adjust(Duration.millis(1))
          const atStart = { claims: yield* Ref.get(claims), upkeeps: yield* Ref.get(upkeeps) }
          yield* TestClock.adjust(Duration.seconds(10))
          const afterTen = yield* Ref.get(claims)
          yield* TestClock.adjust(Duration.seconds(50))
          const upkeepsAfterInterval = yield* Ref.get(upkeeps)
          yield* Scope.close(scope, Exit.void)
          return { atStart, afterTen, upkeepsAfterInterval }
        })
        // upkeep (sync + prune) once at start; two full claims and one empty one without waiting.
        expect(out.atStart).toEqual({ claims: 3, upkeeps: 2 })
        expect(out.afterTen).toBeGreaterThanOrEqual(12)
        expect(out.afterTen).toBeLessThanOrEqual(14)
        expect(out.upkeepsAfterInterval).toBe(4)
      })
  )

  it.effect("closing the layer's scope interrupts the batch in flight", () =>
    Effect.gen(function* () {
      const interrupted = yield* Effect.gen(function* () {
        const started = yield* Queue.unbounded<number>()
        const flag = yield* Ref.make(false)
        const scope = yield* Scope.make()
        const hanging = Effect.zipRight(Queue.offer(started, 0), Effect.never).pipe(
          Effect.onInterrupt(() => Ref.set(flag, true))
        )
        yield* Layer.buildWithScope(scheduler(hanging), scope)
        yield* Queue.take(started)
        yield* Scope.close(scope, Exit.void)
        return yield* Ref.get(flag)
      })
      expect(interrupted).toBe(true)
    })
  )
})

const T0 = 1_700_000_000_000
const MINUTE = 60_000

/** `effect` on the real verification stack over an in-memory store, its TestClock set to T0, with `r1` in the catalog. */
const withStore = <A, E>(
  effect: Effect.Effect<A, E, Layer.Layer.Success<ReturnType<typeof verificationStack>>>,
  url = "http://127.0.0.1:1/unused"
) => {
  const config = verificationConfig({ trustedOrigins: [fixture.origin] })
  return Effect.gen(function* () {
    yield* TestClock.setTime(T0)
    yield* (yield* CatalogWritesRepo).upsertCatalog([entry("r1", url)])
    return yield* effect
  }).pipe(Effect.provide(verificationStack(config)))
}

/** Records an observation of `r1` stamped with the current (test) time. */
const recordNow = (make: (ms: number) => ReturnType<typeof observation>) =>
  Effect.gen(function* () {
    const ms = yield* Clock.currentTimeMillis
    const record = Option.getOrThrow(yield* (yield* ResourceReadsRepo).get(ResourceId.make("r1")))
    return yield* (yield* EvidenceRecorder).recordObservation(record, make(ms))
  })

describe("metric windows and confidence over time (TestClock, real store)", () => {
  it.effect("confidence grows with probes, halves per half-life, and is 0 once the newest probe left the window", () =>
    Effect.gen(function* () {
      const out = yield* withStore(
        Effect.gen(function* () {
          const reader = yield* EvidenceReader
          const confidenceAfter = [] as Array<number>
          for (let i = 0; i < 12; i++) {
            if (i > 0) yield* TestClock.adjust(Duration.minutes(5))
            yield* recordNow((ms) => observation(ms))
            confidenceAfter.push((yield* reader.forResource(ResourceId.make("r1"))).metrics.confidence)
          }
          const fresh = yield* reader.forResource(ResourceId.make("r1"))
          yield* TestClock.adjust(Duration.hours(1))
          const hourLater = yield* reader.forResource(ResourceId.make("r1"))
          yield* TestClock.adjust(Duration.hours(23).pipe(Duration.sum(Duration.millis(1))))
          const stale = yield* reader.forResource(ResourceId.make("r1"))
          // The window is counted in whole hours (the hour holding now - 24 h onwards): a probe one
          // hour after the window's end still sees the old probes of that hour...
          const rollingHour = Effect.flatMap(
            recordNow((ms) => timedOut(ms)),
            () => reader.forResource(ResourceId.make("r1"))
          )
          const withinHour = yield* rollingHour
          // ... and a probe after a silence of the window plus that hour sees only the probes since.
          yield* TestClock.adjust(Duration.hours(1))
          yield* recordNow((ms) => timedOut(ms))
          const after = yield* reader.forResource(ResourceId.make("r1"))
          const transitions = yield* (yield* TransitionsRepo).recent(ResourceId.make("r1"), 10)
          return { confidenceAfter, fresh, hourLater, stale, withinHour, after, transitions }
        })
      )
      for (let i = 1; i < out.confidenceAfter.length; i++) {
        expect(out.confidenceAfter[i]!).toBeGreaterThan(out.confidenceAfter[i - 1]!)
      }
      expect(out.fresh.metrics).toMatchObject({
        observationCount: 12,
        availability24h: 1,
        paymentInterfaceSuccessRate: 1
      })
      expect(out.fresh.metrics.confidence).toBe(Math.round((1 - Math.exp(-1)) * 1000) / 1000)
      expect(out.hourLater.metrics.confidence).toBeCloseTo(out.fresh.metrics.confidence / 2, 3)
      expect(out.stale.metrics).toMatchObject({ confidence: 0, observationCount: 0, availability24h: 0 })
      expect(out.stale.metrics.lastVerified).toBe(new Date(T0 + 55 * MINUTE).toISOString())
      expect(out.stale.status).toBe("PAYMENT_VERIFIED")
      // 23:03 and 23:08 of the day before share the hour that holds now - 24 h (23:08 + 1 ms).
      expect(out.withinHour.metrics).toMatchObject({ observationCount: 3, paymentInterfaceSuccessRate: 1 })
      expect(out.withinHour.status).toBe("DEGRADED")
      expect(out.after.metrics).toMatchObject({ observationCount: 2, availability24h: 0 })
      expect(out.after).toMatchObject({ status: "VALIDATING", verificationLevel: 0 })
      expect(out.transitions[0]).toMatchObject({ from: "DEGRADED", to: "VALIDATING", fromLevel: 2, toLevel: 0 })
    })
  )

  it.effect("observations page newest first by id or by time, and a cycle prunes those past retention", () =>
    Effect.gen(function* () {
      const out = yield* withStore(
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
          const first = yield* repo.page(ResourceId.make("r1"), 2, null)
          const second = yield* repo.page(ResourceId.make("r1"), 2, first.nextBefore)
          const last = yield* repo.page(ResourceId.make("r1"), 2, second.nextBefore)
          const byTime = yield* repo.page(
            ResourceId.make("r1"),
            10,
            observationCursor(new Date(T0 + 2000).toISOString())
          )
          yield* TestClock.adjust(Duration.days(8))
          const cycle = yield* (yield* Prober).runCycle
          const remaining = yield* repo.page(ResourceId.make("r1"), 10, null)
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
  )

  it.effect(
    "rollups past retentionDays are pruned resource by resource in bounded batches; recent hours and other resources stay",
    () =>
      Effect.gen(function* () {
        const HOUR = 3_600_000
        const hourOf = (startMs: number) => ({
          startMs,
          probes: 12,
          answered: 12,
          healthy: 12,
          priceMatches: 12,
          connectFailures: 0,
          firstHealthyMs: startMs,
          latency: [20, 12]
        })
        const out = yield* withStore(
          Effect.gen(function* () {
            const repo = yield* ObservationsRepo
            const ids = ["r2", "r3", "r4", "r5"]
            yield* (yield* CatalogWritesRepo).upsertCatalog(ids.map((id) => entry(id, `http://127.0.0.1:1/${id}`)))
            const cutoff = T0 - 7 * 24 * HOUR
            // Every resource: 5 hours before the cutoff and 3 after it.
            yield* repo.upsertRollups(
              ["r1", ...ids].flatMap((resourceId) =>
                [-5, -4, -3, -2, -1, 0, 1, 2].map((h) => ({
                  resourceId: ResourceId.make(resourceId),
                  rollup: hourOf(cutoff + h * HOUR)
                }))
              )
            )
            // Two resources and three rows per statement: a resource's backlog takes several batches.
            const batches: Array<{ deleted: number; next: string | null }> = []
            let next: string | null = ""
            while (next !== null) {
              const batch: { deleted: number; next: string | null } = yield* repo.pruneRollups(cutoff, next, 2, 3)
              batches.push(batch)
              next = batch.next
            }
            const left = yield* Effect.forEach(["r1", ...ids], (id) =>
              Effect.map(repo.rollups(ResourceId.make(id), 0, Number.MAX_SAFE_INTEGER), (rows) =>
                rows.map((r) => r.startMs - cutoff)
              )
            )
            // Through the scheduled path too: a cycle 8 days on prunes every hour above (the newest is 2 h past the cutoff).
            yield* TestClock.adjust(Duration.days(8))
            yield* (yield* Prober).runCycle
            const afterCycle = yield* Effect.forEach(["r1", ...ids], (id) =>
              repo.rollups(ResourceId.make(id), 0, Number.MAX_SAFE_INTEGER)
            )
            return { batches, left, afterCycle }
          })
        )
        expect(out.batches.every((b) => b.deleted <= 3)).toBe(true)
        expect(out.batches.reduce((sum, b) => sum + b.deleted, 0)).toBe(25)
        expect(out.left).toEqual(Array.from({ length: 5 }, () => [0, HOUR, 2 * HOUR]))
        expect(out.afterCycle.map((rows) => rows.length)).toEqual([0, 0, 0, 0, 0])
      })
  )
})

describe("schedule sync (real store)", () => {
  it.live(
    "walked page by page, the schedule ends with exactly the probe targets: new ones due at once, stale rows gone in every page",
    () =>
      Effect.gen(function* () {
        const out = yield* Effect.gen(function* () {
          const ids = Array.from({ length: 2_500 }, (_, i) => `t${String(i).padStart(5, "0")}`)
          // Resources that stop being probe targets: before the first, inside the first and second pages, after the last.
          const stale = ["a-before", "t00500x", "t01700x", "zz-after"]
          yield* (yield* CatalogWritesRepo).upsertCatalog(
            [...ids, ...stale].map((id) => entry(id, fixture.url(`/paid/${id}`)))
          )
          const prober = yield* Prober
          const first = yield* prober.syncSchedule
          const sql = yield* SqlClient.SqlClient
          yield* sql`UPDATE resources SET listed = 0, listing_hold = NULL, source = 'validate' WHERE ${sql.in("id", stale)}`
          const second = yield* prober.syncSchedule
          const third = yield* prober.syncSchedule
          const rows = yield* sql<{
            resource_id: string
            due_ms: number
          }>`SELECT resource_id, due_ms FROM probe_schedule ORDER BY resource_id`
          return { ids, first, second, third, rows, nowMs: yield* Clock.currentTimeMillis }
        }).pipe(Effect.provide(verificationStack(verificationConfig({ trustedOrigins: [fixture.origin] }))))
        expect(out.first).toEqual({ added: 2_504, removed: 0 })
        expect(out.second).toEqual({ added: 0, removed: 4 })
        expect(out.third).toEqual({ added: 0, removed: 0 })
        expect(out.rows.map((r) => r.resource_id)).toEqual(out.ids)
        expect(out.rows.every((r) => Number(r.due_ms) <= out.nowMs)).toBe(true)
      })
  )
})
