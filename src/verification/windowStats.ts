import type { Observation, ProbeOutcome, RecordedObservation } from "../domain/observations.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { matchesAdvertisedPrice } from "./catalogMatch.js"

/** Settlement and receipt outcomes inside the window. */
export interface EconomicCounts {
  readonly total: number
  readonly successes: number
}

/** Counts over one resource's window, the input of both metrics and status. */
export interface WindowStats {
  /** Probes that were sent; a refused target is the service's own decision, not evidence. */
  readonly probes: number
  /** Probes that got any HTTP answer. */
  readonly answered: number
  readonly healthy: number
  /** Latencies of answered probes, ascending. */
  readonly latencies: ReadonlyArray<number>
  /** Healthy probes whose price equals the advertised one. */
  readonly priceMatches: number
  readonly latestHealthy: RecordedObservation | null
  readonly firstHealthyMs: number | null
  readonly lastObservedMs: number | null
  /** Probes at the end of the window that could not connect or timed out, uninterrupted. */
  readonly trailingConnectFailures: number
  /** The contradiction of the newest probe that decoded a challenge; null when it agreed. */
  readonly latestContradiction: string | null
  readonly economicTotal: number
  readonly economicSuccesses: number
}

const ANSWERED: ReadonlySet<ProbeOutcome> = new Set([
  "healthy",
  "http_status",
  "no_challenge",
  "malformed_challenge",
  "no_acceptable_option"
])
const CONNECT_FAILURE: ReadonlySet<ProbeOutcome> = new Set(["unreachable", "timeout"])

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
  const latestDecoded = [...probes].reverse().find((o) => o.x402Version !== null)
  const first = healthy[0]
  const last = probes[probes.length - 1]
  return {
    probes: probes.length,
    answered: answered.length,
    healthy: healthy.length,
    latencies: answered.flatMap((o) => (o.latencyMs === null ? [] : [o.latencyMs])).sort((a, b) => a - b),
    priceMatches: healthy.filter(
      (o) =>
        o.network !== null &&
        o.scheme !== null &&
        o.asset !== null &&
        o.payTo !== null &&
        o.amount !== null &&
        matchesAdvertisedPrice(
          { network: o.network, scheme: o.scheme, asset: o.asset, payTo: o.payTo, amount: o.amount, maxAmount: o.maxAmount },
          advertised
        )
    ).length,
    latestHealthy: healthy[healthy.length - 1] ?? null,
    firstHealthyMs: first ? timeOf(first) : null,
    lastObservedMs: last ? timeOf(last) : null,
    trailingConnectFailures: trailing,
    latestContradiction: latestDecoded?.contradiction ?? null,
    economicTotal: economic.total,
    economicSuccesses: economic.successes
  }
}
