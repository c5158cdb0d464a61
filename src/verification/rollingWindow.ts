import type { VerificationConfig } from "../config.js"
import type { HourlyRollup, ProbeOutcome, RecordedObservation } from "../domain/observations.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { matchesAdvertisedPrice } from "./catalogMatch.js"
import { addSample, reportedPercentiles } from "./latencySketch.js"
import { windowMs } from "./metrics.js"
import type { ContradictionRun, EconomicCounts, WindowStats } from "./windowStats.js"

/**
 * A resource's probe evidence as hourly buckets plus the few facts that need the exact newest
 * probe (newest healthy, trailing connect failures, the newest contradiction and what agreed since). Each observation
 * changes one bucket and those facts: O(1), whatever the window holds. The window read from it
 * is the buckets of the hours that overlap the last `windowHours` (docs/decisions.md, Metrics).
 */

export const BUCKET_MS = 3_600_000

/** One hour of one resource's probes: what the window sums, and the hourly rollup history keeps. */
export type HourBucket = HourlyRollup

export interface RollingWindow {
  /** Ascending by start, only hours that may still be in a window. */
  readonly buckets: ReadonlyArray<HourBucket>
  readonly lastObservedMs: number | null
  readonly latestHealthy: {
    readonly atMs: number
    readonly observedAt: string
    readonly priceUsd: number | null
  } | null
  /** Probes at the end that could not connect or timed out, uninterrupted (may reach before the window). */
  readonly trailingConnectFailures: number
  /** The newest challenge that contradicted the catalog and the agreeing ones after it (may reach before the window). */
  readonly contradiction: ContradictionRun | null
  /** The key that signed the newest signed challenge's offers (`offer-receipt`). */
  readonly offerSigner: { readonly atMs: number; readonly kid: string } | null
}

export const emptyWindow: RollingWindow = {
  buckets: [],
  lastObservedMs: null,
  latestHealthy: null,
  trailingConnectFailures: 0,
  contradiction: null,
  offerSigner: null
}

/** Outcomes that got an HTTP answer (docs/decisions.md, Probe outcomes). */
export const ANSWERED: ReadonlySet<ProbeOutcome> = new Set([
  "healthy",
  "http_status",
  "no_challenge",
  "malformed_challenge",
  "no_acceptable_option",
  "executed_unpaid"
])
/** Outcomes that count towards OFFLINE. */
export const CONNECT_FAILURE: ReadonlySet<ProbeOutcome> = new Set(["unreachable", "timeout"])

/** The first instant the window read at `nowMs` counts: the start of the hour holding now - window. */
export const windowStartMs = (nowMs: number, config: VerificationConfig) =>
  Math.floor((nowMs - windowMs(config)) / BUCKET_MS) * BUCKET_MS

/** A healthy probe's recorded option asks exactly the advertised price of the same payment. */
export const priceMatches = (o: RecordedObservation, advertised: ReadonlyArray<ResourcePaymentOption>) =>
  o.network !== null &&
  o.scheme !== null &&
  o.asset !== null &&
  o.payTo !== null &&
  o.amount !== null &&
  matchesAdvertisedPrice(
    { network: o.network, scheme: o.scheme, asset: o.asset, payTo: o.payTo, amount: o.amount, maxAmount: o.maxAmount },
    advertised
  )

const emptyBucket = (startMs: number): HourBucket => ({
  startMs,
  probes: 0,
  answered: 0,
  healthy: 0,
  priceMatches: 0,
  connectFailures: 0,
  firstHealthyMs: null,
  latency: []
})

const addToBucket = (
  b: HourBucket,
  o: RecordedObservation,
  atMs: number,
  advertised: ReadonlyArray<ResourcePaymentOption>
): HourBucket => {
  const answered = ANSWERED.has(o.outcome)
  const healthy = o.outcome === "healthy"
  return {
    startMs: b.startMs,
    probes: b.probes + 1,
    answered: b.answered + (answered ? 1 : 0),
    healthy: b.healthy + (healthy ? 1 : 0),
    priceMatches: b.priceMatches + (healthy && priceMatches(o, advertised) ? 1 : 0),
    connectFailures: b.connectFailures + (CONNECT_FAILURE.has(o.outcome) ? 1 : 0),
    firstHealthyMs: healthy && (b.firstHealthyMs === null || atMs < b.firstHealthyMs) ? atMs : b.firstHealthyMs,
    latency: answered && o.latencyMs !== null ? addSample(b.latency, o.latencyMs) : b.latency
  }
}

/**
 * The contradiction run after one more probe. Only a decoded challenge counts: a timeout between two
 * challenges neither breaks nor extends a run. A contradiction starts a new run; an agreeing
 * challenge after the run's contradiction extends it. A late contradiction (older than agreeing
 * challenges already counted) restarts the run from itself: the agreeing ones it hides are lost,
 * which only delays a release.
 */
const nextRun = (run: ContradictionRun | null, o: RecordedObservation, atMs: number): ContradictionRun | null => {
  if (o.x402Version === null || (run !== null && atMs < run.atMs)) return run
  if (o.contradiction !== null)
    return { atMs, reason: o.contradiction, agreeing: 0, firstAgreeingMs: null, lastAgreeingMs: null }
  if (run === null) return null
  return {
    ...run,
    agreeing: run.agreeing + 1,
    firstAgreeingMs: Math.min(run.firstAgreeingMs ?? atMs, atMs),
    lastAgreeingMs: Math.max(run.lastAgreeingMs ?? atMs, atMs)
  }
}

export interface Added {
  readonly window: RollingWindow
  /** Buckets of past hours that this observation closed or changed: the hourly rollups to store. */
  readonly closed: ReadonlyArray<HourBucket>
}

/**
 * Adds one observation. A refused target is not a probe and changes nothing. Hours that can no
 * longer be in any window (before the start of the window read at this observation) are dropped;
 * they were stored as rollups when they closed.
 */
export const addObservation = (
  window: RollingWindow,
  o: RecordedObservation,
  advertised: ReadonlyArray<ResourcePaymentOption>,
  config: VerificationConfig
): Added => {
  if (o.outcome === "refused_target") return { window, closed: [] }
  const atMs = Date.parse(o.observedAt)
  const startMs = Math.floor(atMs / BUCKET_MS) * BUCKET_MS
  const keepFrom = windowStartMs(Math.max(atMs, window.lastObservedMs ?? atMs), config)
  const buckets = window.buckets.filter((b) => b.startMs >= keepFrom)
  const index = buckets.findIndex((b) => b.startMs === startMs)
  // Taken before the filter: an open hour that this probe pushes out of every window (none came for
  // longer than the window) still closes, or history would never store it.
  const newest = window.buckets[window.buckets.length - 1]
  const closed: Array<HourBucket> = []
  if (index >= 0) {
    buckets[index] = addToBucket(buckets[index]!, o, atMs, advertised)
    // A late observation for an hour that already closed changes that hour's stored rollup.
    if (index < buckets.length - 1) closed.push(buckets[index]!)
  } else if (startMs >= keepFrom) {
    const at = buckets.findIndex((b) => b.startMs > startMs)
    const bucket = addToBucket(emptyBucket(startMs), o, atMs, advertised)
    if (at < 0) {
      // A new hour: the previous newest hour is complete.
      if (newest !== undefined) closed.push(newest)
      buckets.push(bucket)
    } else {
      buckets.splice(at, 0, bucket)
      closed.push(bucket)
    }
  }
  const isNewest = window.lastObservedMs === null || atMs >= window.lastObservedMs
  return {
    window: {
      buckets,
      lastObservedMs: isNewest ? atMs : window.lastObservedMs,
      latestHealthy:
        o.outcome === "healthy" && (window.latestHealthy === null || atMs >= window.latestHealthy.atMs)
          ? { atMs, observedAt: o.observedAt, priceUsd: o.priceUsd }
          : window.latestHealthy,
      trailingConnectFailures: !isNewest
        ? window.trailingConnectFailures
        : CONNECT_FAILURE.has(o.outcome)
          ? window.trailingConnectFailures + 1
          : 0,
      contradiction: nextRun(window.contradiction, o, atMs),
      offerSigner:
        typeof o.offerSigner === "string" && (window.offerSigner === null || atMs >= window.offerSigner.atMs)
          ? { atMs, kid: o.offerSigner }
          : window.offerSigner
    },
    closed
  }
}

/** The seller's offer signing key before and after an observation, when it changed; null on the first key seen. */
export const signerChange = (
  before: RollingWindow,
  after: RollingWindow
): { readonly from: string; readonly to: string } | null =>
  before.offerSigner !== null && after.offerSigner !== null && before.offerSigner.kid !== after.offerSigner.kid
    ? { from: before.offerSigner.kid, to: after.offerSigner.kid }
    : null

/** Folds observations (any order) into a window: how a resource's state is rebuilt from raw history. */
export const windowOf = (
  observations: ReadonlyArray<RecordedObservation>,
  advertised: ReadonlyArray<ResourcePaymentOption>,
  config: VerificationConfig
): RollingWindow =>
  [...observations]
    .sort((a, b) => Date.parse(a.observedAt) - Date.parse(b.observedAt) || (a.id < b.id ? -1 : 1))
    .reduce((w, o) => addObservation(w, o, advertised, config).window, emptyWindow)

/** The counts metrics and status are derived from, as of `nowMs`: the buckets in the window summed. */
export const statsAt = (
  window: RollingWindow,
  nowMs: number,
  economic: EconomicCounts,
  config: VerificationConfig
): WindowStats => {
  const fromMs = windowStartMs(nowMs, config)
  const inWindow = window.buckets.filter((b) => b.startMs >= fromMs)
  let probes = 0
  let answered = 0
  let healthy = 0
  let matches = 0
  for (const b of inWindow) {
    probes += b.probes
    answered += b.answered
    healthy += b.healthy
    matches += b.priceMatches
  }
  const within = (atMs: number | undefined | null) => atMs !== undefined && atMs !== null && atMs >= fromMs
  return {
    probes,
    answered,
    healthy,
    ...reportedPercentiles(inWindow.map((b) => b.latency)),
    priceMatches: matches,
    latestHealthy:
      window.latestHealthy !== null && within(window.latestHealthy.atMs)
        ? { observedAt: window.latestHealthy.observedAt, priceUsd: window.latestHealthy.priceUsd }
        : null,
    firstHealthyMs: inWindow.find((b) => b.healthy > 0)?.firstHealthyMs ?? null,
    lastObservedMs: within(window.lastObservedMs) ? window.lastObservedMs : null,
    trailingConnectFailures: Math.min(window.trailingConnectFailures, probes),
    contradiction: within(window.contradiction?.atMs) ? window.contradiction : null,
    economicTotal: economic.total,
    economicSuccesses: economic.successes
  }
}

/** The stored form: one JSON text per resource, next to its metrics row. */
export const encodeWindow = (w: RollingWindow): string =>
  JSON.stringify({
    b: w.buckets.map((b) => [
      b.startMs,
      b.probes,
      b.answered,
      b.healthy,
      b.priceMatches,
      b.connectFailures,
      b.firstHealthyMs,
      b.latency
    ]),
    o: w.lastObservedMs,
    h: w.latestHealthy === null ? null : [w.latestHealthy.atMs, w.latestHealthy.observedAt, w.latestHealthy.priceUsd],
    t: w.trailingConnectFailures,
    q:
      w.contradiction === null
        ? null
        : [
            w.contradiction.atMs,
            w.contradiction.reason,
            w.contradiction.agreeing,
            w.contradiction.firstAgreeingMs,
            w.contradiction.lastAgreeingMs
          ],
    s: w.offerSigner === null ? null : [w.offerSigner.atMs, w.offerSigner.kid]
  })

/**
 * The stored run; a window stored before runs existed kept only the newest decoded challenge (`d`):
 * a contradiction there starts a run with nothing agreeing yet, so a quarantine holds through the upgrade.
 */
const decodeRun = (raw: {
  q?: [number, string, number, number | null, number | null] | null
  d?: [number, string | null] | null
}): ContradictionRun | null => {
  if (raw.q !== undefined) {
    return raw.q === null
      ? null
      : { atMs: raw.q[0], reason: raw.q[1], agreeing: raw.q[2], firstAgreeingMs: raw.q[3], lastAgreeingMs: raw.q[4] }
  }
  const d = raw.d
  return d === undefined || d === null || d[1] === null
    ? null
    : { atMs: d[0], reason: d[1], agreeing: 0, firstAgreeingMs: null, lastAgreeingMs: null }
}

/** Null when the text is missing or not this shape: the caller rebuilds the window from raw observations. */
export const decodeWindow = (text: string | null): RollingWindow | null => {
  if (text === null) return null
  try {
    const raw = JSON.parse(text)
    return {
      buckets: (raw.b as Array<[number, number, number, number, number, number, number | null, Array<number>]>).map(
        ([startMs, probes, answered, healthy, priceMatches, connectFailures, firstHealthyMs, latency]) => ({
          startMs,
          probes,
          answered,
          healthy,
          priceMatches,
          connectFailures,
          firstHealthyMs,
          latency
        })
      ),
      lastObservedMs: raw.o,
      latestHealthy: raw.h === null ? null : { atMs: raw.h[0], observedAt: raw.h[1], priceUsd: raw.h[2] },
      trailingConnectFailures: raw.t,
      contradiction: decodeRun(raw),
      offerSigner: Array.isArray(raw.s) ? { atMs: raw.s[0], kid: raw.s[1] } : null
    }
  } catch {
    return null
  }
}

/** A window so wide that nothing leaves it: for figures over a given set of observations. */
const UNBOUNDED = { windowHours: 1e9 } as VerificationConfig

/**
 * The figures of exactly these observations (the status page's per-bucket series): the same
 * classification and latency sketch as the metrics row, without a window.
 */
export const statsOf = (
  observations: ReadonlyArray<RecordedObservation>,
  advertised: ReadonlyArray<ResourcePaymentOption>
): WindowStats => {
  const window = windowOf(observations, advertised, UNBOUNDED)
  return statsAt(window, window.lastObservedMs ?? 0, { total: 0, successes: 0 }, UNBOUNDED)
}
