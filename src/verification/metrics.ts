import type { VerificationConfig } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import { emptyMetrics, type MetricsSnapshot, type ResourceMetrics } from "../domain/metrics.js"
import type { WindowStats } from "./windowStats.js"

export const windowMs = (config: VerificationConfig) => config.windowHours * 3_600_000

const ratio = (part: number, whole: number) => (whole === 0 ? 0 : part / whole)

/**
 * README "Metrics": availability = answered / probes, payment interface success rate = healthy /
 * answered, each 0 without any (refused targets are never counted as probes).
 */
export const probeRatios = (counts: {
  readonly probes: number
  readonly answered: number
  readonly healthy: number
}) => ({
  availability: ratio(counts.answered, counts.probes),
  paymentInterfaceSuccessRate: ratio(counts.healthy, counts.answered)
})

export const snapshotFrom = (
  resourceId: ResourceId,
  stats: WindowStats,
  previous: MetricsSnapshot | null,
  transactionVerified: boolean
): MetricsSnapshot => {
  const { availability: availability24h, paymentInterfaceSuccessRate } = probeRatios(stats)
  return {
    resourceId,
    availability24h,
    paymentInterfaceSuccessRate,
    transactionSuccessRate: ratio(stats.economicSuccesses, stats.economicTotal),
    p50LatencyMs: stats.p50LatencyMs,
    p95LatencyMs: stats.p95LatencyMs,
    observedPriceUsd: stats.latestHealthy?.priceUsd ?? null,
    priceConsistency: ratio(stats.priceMatches, stats.healthy),
    reliability: availability24h * paymentInterfaceSuccessRate,
    observationCount: stats.probes,
    lastVerified: stats.latestHealthy?.observedAt ?? previous?.lastVerified ?? null,
    lastObservedAt: stats.lastObservedMs === null ? null : new Date(stats.lastObservedMs).toISOString(),
    validChallengeSeen: stats.healthy > 0 || (previous?.validChallengeSeen ?? false),
    transactionVerified
  }
}

/**
 * Sample-size term times freshness term. The sample term is 1 - e^(-n/scale), so it grows with
 * probes in the window and approaches 1; freshness halves every half-life since the newest probe
 * and is 0 once that probe has left the window. No probes, no confidence. Reported to three
 * decimals: it decays every millisecond, and two reads a moment apart should agree.
 */
export const confidence = (observationCount: number, ageMs: number, config: VerificationConfig): number => {
  if (observationCount === 0 || ageMs > windowMs(config)) return 0
  const sample = 1 - Math.exp(-observationCount / config.confidenceSampleScale)
  const freshness = 0.5 ** (Math.max(0, ageMs) / (config.confidenceHalfLifeSeconds * 1000))
  return Math.round(sample * freshness * 1000) / 1000
}

/** What of a resource's metrics moves with the time of reading: whether its newest probe is still in the window, and the confidence. */
export interface MetricsMoment {
  readonly inWindow: boolean
  readonly confidence: number
}

const outOfWindow: MetricsMoment = { inWindow: false, confidence: 0 }

/** The moment at `nowMs` of metrics whose newest probe was at `lastObservedMs` (null: never probed). */
export const momentAt = (
  lastObservedMs: number | null,
  observationCount: number,
  nowMs: number,
  config: VerificationConfig
): MetricsMoment => {
  if (lastObservedMs === null) return outOfWindow
  const ageMs = nowMs - lastObservedMs
  return ageMs > windowMs(config)
    ? outOfWindow
    : { inWindow: true, confidence: confidence(observationCount, ageMs, config) }
}

export const lastObservedMsOf = (snapshot: MetricsSnapshot | null) =>
  snapshot === null || snapshot.lastObservedAt === null ? null : Date.parse(snapshot.lastObservedAt)

/**
 * The metrics at a moment. When the newest probe has left the window there is no current
 * evidence: every window figure reads as empty, and only `lastVerified` remembers the past.
 */
export const metricsAt = (
  resourceId: ResourceId,
  snapshot: MetricsSnapshot | null,
  moment: MetricsMoment
): ResourceMetrics => {
  if (snapshot === null || !moment.inWindow)
    return { ...emptyMetrics(resourceId), lastVerified: snapshot?.lastVerified ?? null }
  const { lastObservedAt: _lastObservedAt, validChallengeSeen: _seen, transactionVerified: _tx, ...metrics } = snapshot
  return { ...metrics, confidence: moment.confidence }
}

/** The metrics as of `nowMs`. */
export const currentMetrics = (
  resourceId: ResourceId,
  snapshot: MetricsSnapshot | null,
  nowMs: number,
  config: VerificationConfig
): ResourceMetrics =>
  metricsAt(resourceId, snapshot, momentAt(lastObservedMsOf(snapshot), snapshot?.observationCount ?? 0, nowMs, config))
