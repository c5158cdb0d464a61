/**
 * History's pure part (src/verification/history.ts): the span a request reads, and the hours read
 * from stored rollups and the rolling window. The property folds observations through the rolling
 * window exactly as the recorder does (stored form, rollups upserted from `closed`) and compares
 * every hour with a count made directly from the same observations.
 */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import fc from "fast-check"
import { loadConfig } from "../src/config.js"
import type { HistoryHour, HourlyRollup, RecordedObservation } from "../src/domain/observations.js"
import { historyHours, historyRange } from "../src/verification/history.js"
import { addSample } from "../src/verification/latencySketch.js"
import { addObservation, decodeWindow, emptyWindow, encodeWindow } from "../src/verification/rollingWindow.js"
import { advertised, answeredWithout, observation, timedOut } from "./fixtures/observations.js"
import { referenceHour } from "./support/referenceWindow.js"

const verification = Either.getOrThrow(loadConfig(undefined, {})).verification
const HOUR = 3_600_000
const DAY = 24 * HOUR
/** An hour boundary, so spans below can start on one. */
const T0 = Math.floor(1_700_000_000_000 / HOUR) * HOUR

const hour = (startMs: number, counts: Partial<HourlyRollup> = {}): HourlyRollup => ({
  startMs,
  probes: 4,
  answered: 3,
  healthy: 2,
  priceMatches: 1,
  connectFailures: 1,
  firstHealthyMs: startMs + 60_000,
  latency: [40, 1, 90, 1, 100, 1],
  ...counts
})

describe("historyRange", () => {
  const now = T0 + 17 * 60_000

  test("to defaults to now and from to a day before to", () => {
    expect(historyRange({}, now, 7)).toEqual(Either.right({ fromMs: now - DAY, toMs: now }))
    const to = "2023-11-01T10:00:00Z"
    expect(historyRange({ to }, now, 7)).toEqual(Either.right({ fromMs: Date.parse(to) - DAY, toMs: Date.parse(to) }))
    const from = new Date(now - 3 * DAY).toISOString()
    expect(historyRange({ from }, now, 7)).toEqual(Either.right({ fromMs: now - 3 * DAY, toMs: now }))
  })

  test("from must be before to, and at most retentionDays before it", () => {
    const at = (ms: number) => new Date(ms).toISOString()
    expect(historyRange({ from: at(now), to: at(now) }, now, 7)).toEqual(Either.left("from must be before to"))
    expect(historyRange({ from: at(now + 1), to: at(now) }, now, 7)).toEqual(Either.left("from must be before to"))
    expect(historyRange({ from: at(now + HOUR) }, now, 7)).toEqual(Either.left("from must be before to"))
    expect(historyRange({ from: at(now - 7 * DAY) }, now, 7)).toEqual(
      Either.right({ fromMs: now - 7 * DAY, toMs: now })
    )
    const tooLong = historyRange({ from: at(now - 7 * DAY - 1) }, now, 7)
    expect(Either.isLeft(tooLong) && tooLong.left).toContain("retentionDays (7)")
    expect(Either.isRight(historyRange({ from: at(now - 2 * DAY) }, now, 2))).toBe(true)
    expect(Either.isLeft(historyRange({ from: at(now - 2 * DAY - 1) }, now, 2))).toBe(true)
  })

  test("the longest span holds at most retentionDays x 24 hours, wherever it starts", () => {
    const every = Array.from({ length: 24 * 9 }, (_, i) => hour(T0 + i * HOUR))
    for (const offset of [0, 1, 30 * 60_000, HOUR - 1]) {
      const range = Either.getOrThrow(
        historyRange(
          { from: new Date(T0 + offset).toISOString(), to: new Date(T0 + offset + 7 * DAY).toISOString() },
          T0,
          7
        )
      )
      const hours = historyHours(every, [], range)
      // A half-open span of 168 hours holds exactly 168 hour starts.
      expect(hours).toHaveLength(7 * 24)
      expect(Date.parse(hours[0]!.startAt)).toBeGreaterThanOrEqual(T0 + offset)
    }
  })
})

describe("historyHours", () => {
  const all = { fromMs: T0 - DAY, toMs: T0 + DAY }

  test("an hour of both the rollups and the window appears once, as the window's bucket", () => {
    const stored = [hour(T0), hour(T0 + HOUR, { probes: 2, answered: 2, healthy: 2 })]
    const window = [
      hour(T0 + HOUR, { probes: 5, answered: 4, healthy: 1 }),
      hour(T0 + 2 * HOUR, { probes: 1, answered: 1, healthy: 1 })
    ]
    const hours = historyHours(stored, window, all)
    expect(hours.map((h) => [h.startAt, h.probes])).toEqual([
      [new Date(T0).toISOString(), 4],
      [new Date(T0 + HOUR).toISOString(), 5],
      [new Date(T0 + 2 * HOUR).toISOString(), 1]
    ])
  })

  test("figures: the ratios of docs/verification.md (0 when nothing answered) and the metrics' percentiles; empty hours are left out", () => {
    let latency: ReadonlyArray<number> = []
    for (const ms of [30, 10, 20, 400, 50]) latency = addSample(latency, ms)
    const hours = historyHours(
      [
        hour(T0, { probes: 8, answered: 5, healthy: 4, priceMatches: 3, connectFailures: 2, latency }),
        hour(T0 + HOUR, { probes: 0, answered: 0, healthy: 0, latency: [] })
      ],
      [hour(T0 + 2 * HOUR, { probes: 3, answered: 0, healthy: 0, priceMatches: 0, connectFailures: 3, latency: [] })],
      all
    )
    expect(hours).toEqual([
      {
        startAt: new Date(T0).toISOString(),
        endAt: new Date(T0 + HOUR).toISOString(),
        probes: 8,
        answered: 5,
        healthy: 4,
        priceMatches: 3,
        connectFailures: 2,
        availability: 5 / 8,
        paymentInterfaceSuccessRate: 4 / 5,
        // Nearest rank: the 3rd and the 5th of 10, 20, 30, 50, 400 (400 reported as its bin's midpoint, within 1/128).
        p50LatencyMs: 30,
        p95LatencyMs: 401
      },
      {
        startAt: new Date(T0 + 2 * HOUR).toISOString(),
        endAt: new Date(T0 + 3 * HOUR).toISOString(),
        probes: 3,
        answered: 0,
        healthy: 0,
        priceMatches: 0,
        connectFailures: 3,
        availability: 0,
        paymentInterfaceSuccessRate: 0,
        p50LatencyMs: null,
        p95LatencyMs: null
      }
    ] satisfies Array<HistoryHour>)
  })

  test("an hour counts when it starts inside [from, to), oldest first", () => {
    const window = [hour(T0 + 3 * HOUR), hour(T0 + HOUR)]
    const stored = [hour(T0), hour(T0 + 2 * HOUR)]
    const starts = (fromMs: number, toMs: number) =>
      historyHours(stored, window, { fromMs, toMs }).map((h) => Date.parse(h.startAt))
    expect(starts(T0 - DAY, T0 + DAY)).toEqual([T0, T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR])
    expect(starts(T0 + 1, T0 + 3 * HOUR)).toEqual([T0 + HOUR, T0 + 2 * HOUR])
    expect(starts(T0 + HOUR, T0 + 3 * HOUR + 1)).toEqual([T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR])
    expect(starts(T0 + 4 * HOUR, T0 + 5 * HOUR)).toEqual([])
  })
})

/** One probe of any outcome at `ms` (refused targets included: they are no probe). */
const anyObservation = (ms: number, kind: number, latency: number): RecordedObservation => {
  switch (kind) {
    case 0:
      return timedOut(ms)
    case 1:
      return timedOut(ms, { outcome: "unreachable" })
    case 2:
      return answeredWithout(ms, 500, { latencyMs: latency })
    case 3:
      return observation(ms, { outcome: "refused_target", httpStatus: null, latencyMs: null })
    case 4:
      return observation(ms, { latencyMs: latency, amount: "20000", priceUsd: 0.002 })
    default:
      return observation(ms, { latencyMs: latency })
  }
}

/** Bursts of probes with gaps between them, some longer than the metric window. */
const histories = fc.array(
  fc.record({
    gapHours: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 20, max: 60 })),
    probes: fc.array(
      fc.record({
        offsetMs: fc.integer({ min: 0, max: 5 * HOUR }),
        // Recorded up to half an hour after it was taken, so an hour already closed is sometimes changed again.
        delayMs: fc.integer({ min: 0, max: 30 * 60_000 }),
        kind: fc.integer({ min: 0, max: 7 }),
        latency: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 6000 }))
      }),
      { maxLength: 40 }
    )
  }),
  { maxLength: 8 }
)

describe("history against the observations it was folded from", () => {
  test("every hour with probes appears once with the counts, ratios and percentiles (within the sketch's bound) of its own probes", () => {
    fc.assert(
      fc.property(histories, (bursts) => {
        let start = T0
        const taken: Array<{ o: RecordedObservation; arrives: number }> = []
        bursts.forEach((burst, b) => {
          start += burst.gapHours * HOUR
          burst.probes.forEach((p, i) => {
            const o = anyObservation(start + p.offsetMs, p.kind, p.latency)
            taken.push({ o: { ...o, id: `${o.id}_${b}_${i}` }, arrives: start + p.offsetMs + p.delayMs })
          })
          start += 5 * HOUR
        })
        // The recorder: one observation at a time in arrival order, the window kept in its stored form, closed hours upserted.
        let window = emptyWindow
        const rollups = new Map<number, HourlyRollup>()
        for (const { o } of [...taken].sort((a, b) => a.arrives - b.arrives)) {
          const added = addObservation(window, o, [advertised], verification)
          for (const closed of added.closed) rollups.set(closed.startMs, closed)
          window = decodeWindow(encodeWindow(added.window))!
        }
        const range = { fromMs: T0, toMs: start + DAY }
        const got = historyHours([...rollups.values()], window.buckets, range)

        const byHour = new Map<number, Array<RecordedObservation>>()
        for (const { o } of taken) {
          if (o.outcome === "refused_target") continue
          const h = Math.floor(Date.parse(o.observedAt) / HOUR) * HOUR
          byHour.set(h, [...(byHour.get(h) ?? []), o])
        }
        const expected = [...byHour.entries()]
          .sort(([a], [b]) => a - b)
          .map(([h, os]) => referenceHour(h, os, [advertised]))
        const withoutLatency = ({ p50LatencyMs: _a, p95LatencyMs: _b, ...rest }: HistoryHour) => rest
        expect(got.map(withoutLatency)).toEqual(expected.map(withoutLatency))
        got.forEach((hourGot, i) => {
          for (const key of ["p50LatencyMs", "p95LatencyMs"] as const) {
            const exact = expected[i]![key]
            if (exact === null) expect(hourGot[key]).toBeNull()
            else expect(Math.abs(hourGot[key]! - exact)).toBeLessThanOrEqual(exact < 128 ? 0 : exact / 128)
          }
        })
      }),
      { numRuns: 200 }
    )
  })
})
