import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import fc from "fast-check"
import { loadConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { RecordedObservation } from "../src/domain/observations.js"
import { binOf, valueOfBin } from "../src/verification/latencySketch.js"
import { snapshotFrom } from "../src/verification/metrics.js"
import {
  addObservation,
  decodeWindow,
  emptyWindow,
  encodeWindow,
  signerChange,
  statsAt,
  windowStartMs
} from "../src/verification/rollingWindow.js"
import { deriveStanding, statusRules } from "../src/verification/status.js"
import { advertised, answeredWithout, observation, timedOut } from "./fixtures/observations.js"
import { summarizeWindow } from "./support/referenceWindow.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const verification = config.verification
const rules = statusRules(config)
const T0 = 1_700_000_000_000
const HOUR = 3_600_000

describe("latency sketch (pure)", () => {
  test("exact below 128 ms, within 1/128 of the sample above", () => {
    for (let v = 0; v < 128; v++) expect(valueOfBin(binOf(v))).toBe(v)
    fc.assert(
      fc.property(fc.integer({ min: 128, max: 2 ** 30 }), (v) => {
        expect(Math.abs(valueOfBin(binOf(v)) - v)).toBeLessThanOrEqual(v / 128)
      })
    )
  })
})

/** One probe of any outcome at `ms`: the kinds the metrics and the status rules tell apart. */
const anyObservation = (ms: number, kind: number, latency: number, price: number): RecordedObservation => {
  switch (kind) {
    case 0:
      return timedOut(ms)
    case 1:
      return answeredWithout(ms, 500, { latencyMs: latency })
    case 2:
      return observation(ms, { outcome: "refused_target", httpStatus: null, latencyMs: null })
    case 3:
      return observation(ms, { latencyMs: latency, contradiction: "payee differs" })
    case 4:
      return observation(ms, { latencyMs: latency, amount: "20000", priceUsd: 0.002 })
    default:
      return observation(ms, { latencyMs: latency, priceUsd: price })
  }
}

const probes = fc.array(
  fc.record({
    offsetMs: fc.integer({ min: 0, max: 40 * HOUR }),
    kind: fc.integer({ min: 0, max: 7 }),
    latency: fc.oneof(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 6000 })),
    price: fc.constantFrom(0.001, 0.0012)
  }),
  { maxLength: 400 }
)

describe("rolling window against the reference computation (full scan of the same observations)", () => {
  test("every figure and the status agree; latency percentiles within the sketch's bound", () => {
    fc.assert(
      fc.property(probes, fc.integer({ min: 0, max: 4 * HOUR }), fc.boolean(), (generated, readAfter, tx) => {
        const observations = generated
          .map((g, i) => ({
            ...anyObservation(T0 + g.offsetMs, g.kind, g.latency, g.price),
            id: `obs_${String(g.offsetMs).padStart(12, "0")}_${i}`
          }))
          .sort((a, b) => Date.parse(a.observedAt) - Date.parse(b.observedAt) || (a.id < b.id ? -1 : 1))
        // Through the stored form, as the recorder keeps it between probes.
        let window = emptyWindow
        for (const o of observations)
          window = decodeWindow(encodeWindow(addObservation(window, o, [advertised], verification).window))!
        const last = observations[observations.length - 1]
        const nowMs = (last ? Date.parse(last.observedAt) : T0) + readAfter
        const economic = { total: 3, successes: 2 }
        const rolling = statsAt(window, nowMs, economic, verification)
        const from = windowStartMs(nowMs, verification)
        const reference = summarizeWindow(
          observations.filter((o) => Date.parse(o.observedAt) >= from),
          economic,
          [advertised]
        )
        const { p50LatencyMs, p95LatencyMs, ...counts } = rolling
        const { p50LatencyMs: r50, p95LatencyMs: r95, ...referenceCounts } = reference
        expect(counts).toEqual(referenceCounts)
        for (const [got, exact] of [
          [p50LatencyMs, r50],
          [p95LatencyMs, r95]
        ] as const) {
          if (exact === null) expect(got).toBeNull()
          else expect(Math.abs(got! - exact)).toBeLessThanOrEqual(exact < 128 ? 0 : exact / 128)
        }
        expect(deriveStanding(rolling, tx, nowMs, rules)).toEqual(deriveStanding(reference, tx, nowMs, rules))
        const {
          p50LatencyMs: _a,
          p95LatencyMs: _b,
          ...snapshot
        } = snapshotFrom(ResourceId.make("r1"), rolling, null, tx)
        const {
          p50LatencyMs: _c,
          p95LatencyMs: _d,
          ...referenceSnapshot
        } = snapshotFrom(ResourceId.make("r1"), reference, null, tx)
        expect(snapshot).toEqual(referenceSnapshot)
      }),
      { numRuns: 300 }
    )
  })

  test("hours leave the window whole, and closed hours are handed out as rollups once", () => {
    let window = emptyWindow
    const closed: Array<number> = []
    for (let h = 0; h < 30; h++) {
      for (const m of [0, 20, 40]) {
        const added = addObservation(window, observation(T0 + h * HOUR + m * 60_000), [advertised], verification)
        window = added.window
        closed.push(...added.closed.map((b) => b.startMs))
      }
    }
    expect(new Set(closed).size).toBe(closed.length)
    // 30 clock hours (T0 is 22:13, each hour probed at :13, :33, :53): every hour but the newest closed.
    expect(closed).toHaveLength(29)
    // At most the hours a window can still reach are kept: O(window / hour), whatever the cadence.
    expect(window.buckets.length).toBeLessThanOrEqual(verification.windowHours + 1)
  })

  test("an open hour that a probe long after pushes out of every window still closes", () => {
    const first = addObservation(emptyWindow, observation(T0), [advertised], verification)
    const later = addObservation(
      first.window,
      observation(T0 + (verification.windowHours + 6) * HOUR),
      [advertised],
      verification
    )
    expect(later.window.buckets.map((b) => b.startMs)).toEqual([
      Math.floor((T0 + (verification.windowHours + 6) * HOUR) / HOUR) * HOUR
    ])
    expect(later.closed).toEqual(first.window.buckets)
  })
})

describe("the seller's offer signing key in the window (pure)", () => {
  const signed = (ms: number, kid: string | null) => observation(ms, { offerSigner: kid })
  const add = (w: typeof emptyWindow, o: RecordedObservation) =>
    decodeWindow(encodeWindow(addObservation(w, o, [advertised], verification).window))!

  test("the first key seen is no change; a different key is, naming both; unsigned challenges keep the key", () => {
    const first = add(emptyWindow, signed(T0, "did:jwk:A#0"))
    expect(signerChange(emptyWindow, first)).toBeNull()
    const unsigned = add(first, signed(T0 + 1000, null))
    expect(unsigned.offerSigner?.kid).toBe("did:jwk:A#0")
    expect(signerChange(first, unsigned)).toBeNull()
    const same = add(unsigned, signed(T0 + 2000, "did:jwk:A#0"))
    expect(signerChange(unsigned, same)).toBeNull()
    const rotated = add(same, signed(T0 + 3000, "did:jwk:B#0"))
    expect(signerChange(same, rotated)).toEqual({ from: "did:jwk:A#0", to: "did:jwk:B#0" })
    // A late observation signed by the old key does not turn the newest key back.
    const late = add(rotated, signed(T0 + 2500, "did:jwk:A#0"))
    expect(late.offerSigner?.kid).toBe("did:jwk:B#0")
    expect(signerChange(rotated, late)).toBeNull()
  })
})
