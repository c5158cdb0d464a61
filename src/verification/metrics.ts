import type { VerificationConfig } from "../config.js"
import { emptyMetrics, type MetricsSnapshot, type ResourceMetrics } from "../domain/metrics.js"
import type { WindowStats } from "./windowStats.js"

export const windowMs = (config: VerificationConfig) => config.windowHours * 3_600_000

const ratio = (part: number, whole: number) => (whole === 0 ? 0 : part / whole)

/**
 * README "Metrics": availability = answered / probes, payment interface success rate = healthy /
 * answered, each 0 without any (refused targets are never counted as probes).
 */
export const probeRatios = (counts: { readonly probes: number; readonly answered: number; readonly healthy: number }) => ({
  availability: ratio(counts.answered, counts.probes),
  paymentInterfaceSuccessRate: ratio(counts.healthy, counts.answered)
})

export const snapshotFrom = (
  resourceId: string,
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
  const freshness = Math.pow(0.5, Math.max(0, ageMs) / (config.confidenceHalfLifeSeconds * 1000))
  return Math.round(sample * freshness * 1000) / 1000
}

/**
 * The metrics as of `nowMs`. When the newest probe has left the window there is no current
 * evidence: every window figure reads as empty, and only `lastVerified` remembers the past.
 */
export const currentMetrics = (
  resourceId: string,
  snapshot: MetricsSnapshot | null,
  nowMs: number,
  config: VerificationConfig
): ResourceMetrics => {
  if (snapshot === null || snapshot.lastObservedAt === null) {
    return { ...emptyMetrics(resourceId), lastVerified: snapshot?.lastVerified ?? null }
  }
  const ageMs = nowMs - Date.parse(snapshot.lastObservedAt)
  if (ageMs > windowMs(config)) return { ...emptyMetrics(resourceId), lastVerified: snapshot.lastVerified }
  const { lastObservedAt: _lastObservedAt, validChallengeSeen: _seen, transactionVerified: _tx, ...metrics } = snapshot
  return { ...metrics, confidence: confidence(snapshot.observationCount, ageMs, config) }
}
