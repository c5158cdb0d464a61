import type { Observation, RecordedObservation } from "../../src/domain/observations.js"
import type { ResourcePaymentOption } from "../../src/domain/resources.js"
import { ANSWERED, CONNECT_FAILURE, priceMatches } from "../../src/verification/rollingWindow.js"
import type { EconomicCounts, WindowStats } from "../../src/verification/windowStats.js"

/**
 * The reference computation of a window's figures: a full scan of the given observations, with
 * exact nearest-rank percentiles (what the service computed before rolling aggregates). Tests
 * compare the rolling window against it, and feed it to the pure status rules.
 */

// The outcome classes and the price match of one probe are definitions, shared; the computation
// over a window is the reference's own.

/** Nearest-rank percentile of an ascending list; null when empty. */
export const percentile = (ascending: ReadonlyArray<number>, q: number): number | null =>
  ascending.length === 0 ? null : ascending[Math.max(0, Math.ceil(q * ascending.length) - 1)]!

const timeOf = (o: Observation) => Date.parse(o.observedAt)

export const summarizeWindow = (
  observations: ReadonlyArray<RecordedObservation>,
  economic: EconomicCounts,
  advertised: ReadonlyArray<ResourcePaymentOption>
): WindowStats => {
  const probes = observations
    .filter((o) => o.outcome !== "refused_target")
    .sort((a, b) => timeOf(a) - timeOf(b) || (a.id < b.id ? -1 : 1))
  const answered = probes.filter((o) => ANSWERED.has(o.outcome))
  const healthy = probes.filter((o) => o.outcome === "healthy")
  let trailing = 0
  for (let i = probes.length - 1; i >= 0 && CONNECT_FAILURE.has(probes[i]!.outcome); i--) trailing++
  // The newest contradicting challenge, and the challenges after it (all of them agree, by definition of newest).
  const decoded = probes.filter((o) => o.x402Version !== null)
  let lastContradiction = decoded.length - 1
  while (lastContradiction >= 0 && decoded[lastContradiction]!.contradiction === null) lastContradiction--
  const agreeing = lastContradiction < 0 ? [] : decoded.slice(lastContradiction + 1)
  const first = healthy[0]
  const last = probes[probes.length - 1]
  return {
    probes: probes.length,
    answered: answered.length,
    healthy: healthy.length,
    ...(() => {
      const latencies = answered.flatMap((o) => (o.latencyMs === null ? [] : [o.latencyMs])).sort((a, b) => a - b)
      return { p50LatencyMs: percentile(latencies, 0.5), p95LatencyMs: percentile(latencies, 0.95) }
    })(),
    priceMatches: healthy.filter((o) => priceMatches(o, advertised)).length,
    latestHealthy: (() => {
      const latest = healthy[healthy.length - 1]
      return latest === undefined ? null : { observedAt: latest.observedAt, priceUsd: latest.priceUsd }
    })(),
    firstHealthyMs: first ? timeOf(first) : null,
    lastObservedMs: last ? timeOf(last) : null,
    trailingConnectFailures: trailing,
    contradiction:
      lastContradiction < 0
        ? null
        : {
            atMs: timeOf(decoded[lastContradiction]!),
            reason: decoded[lastContradiction]!.contradiction!,
            agreeing: agreeing.length,
            firstAgreeingMs: agreeing.length === 0 ? null : timeOf(agreeing[0]!),
            lastAgreeingMs: agreeing.length === 0 ? null : timeOf(agreeing[agreeing.length - 1]!)
          },
    economicTotal: economic.total,
    economicSuccesses: economic.successes
  }
}

const HOUR_MS = 3_600_000

/** One history hour (`GET /v1/resources/{id}/history`) counted directly from its probes, with exact nearest-rank percentiles. */
export const referenceHour = (
  startMs: number,
  inHour: ReadonlyArray<RecordedObservation>,
  advertised: ReadonlyArray<ResourcePaymentOption>
) => {
  const stats = summarizeWindow(inHour, { total: 0, successes: 0 }, advertised)
  return {
    startAt: new Date(startMs).toISOString(),
    endAt: new Date(startMs + HOUR_MS).toISOString(),
    probes: stats.probes,
    answered: stats.answered,
    healthy: stats.healthy,
    priceMatches: stats.priceMatches,
    connectFailures: inHour.filter((o) => CONNECT_FAILURE.has(o.outcome)).length,
    availability: stats.answered / stats.probes,
    paymentInterfaceSuccessRate: stats.answered === 0 ? 0 : stats.healthy / stats.answered,
    p50LatencyMs: stats.p50LatencyMs,
    p95LatencyMs: stats.p95LatencyMs
  }
}
