import type { Config, VerificationConfig } from "../config.js"
import type { OperatorQuarantine } from "../domain/curation.js"
import type { ServiceStatus } from "../domain/resources.js"
import { windowMs } from "./metrics.js"
import type { ContradictionRun, WindowStats } from "./windowStats.js"

export interface Standing {
  readonly status: ServiceStatus
  readonly level: number
  readonly reason: string
}

/** What the status rules read: the verification settings, and the probe interval a quarantine's release must span. */
export interface StatusRules extends VerificationConfig {
  readonly probeIntervalSeconds: number
}

export const statusRules = (config: Pick<Config, "verification" | "probes">): StatusRules => ({
  ...config.verification,
  probeIntervalSeconds: config.probes.intervalSeconds
})

/**
 * Whether the challenges that agreed with the catalog since its newest contradiction lift the
 * automatic quarantine: at least `quarantineReleaseChallenges` of them in a row, the first and the
 * last at least one probe interval apart. A seller that alternates its price never gets there, and
 * one that turns honest cannot be waved through by a burst of probes in one interval.
 */
export const quarantineLifted = (run: ContradictionRun, rules: StatusRules): boolean =>
  run.agreeing >= rules.quarantineReleaseChallenges &&
  run.firstAgreeingMs !== null &&
  run.lastAgreeingMs !== null &&
  run.lastAgreeingMs - run.firstAgreeingMs >= rules.probeIntervalSeconds * 1000

const quarantineReason = (run: ContradictionRun, rules: StatusRules) => {
  const since =
    run.agreeing === 0
      ? ""
      : `; ${run.agreeing} agreeing challenge${run.agreeing === 1 ? "" : "s"} since, over ${Math.round(((run.lastAgreeingMs ?? 0) - (run.firstAgreeingMs ?? 0)) / 1000)} s`
  return `challenge contradicts the catalog: ${run.reason}${since} (lifted after ${rules.quarantineReleaseChallenges} in a row over at least ${rules.probeIntervalSeconds} s)`
}

const pct = (x: number) => `${Math.round(x * 1000) / 10}%`

/**
 * Level 4 needs healthy probes spread over the whole window: at least `continuousMinProbes`
 * (never fewer than two), the first within one expected probe slot of the window's start and the
 * newest within one slot of now. One probe can never satisfy it.
 */
const continuous = (stats: WindowStats, lastHealthyMs: number, nowMs: number, config: VerificationConfig) => {
  const minProbes = Math.max(2, config.continuousMinProbes)
  const slot = windowMs(config) / minProbes
  const availability = stats.probes === 0 ? 0 : stats.answered / stats.probes
  return (
    stats.healthy >= minProbes &&
    availability >= config.continuousMinAvailability &&
    stats.firstHealthyMs !== null &&
    lastHealthyMs - stats.firstHealthyMs >= windowMs(config) - slot &&
    nowMs - lastHealthyMs <= slot
  )
}

/** The level earned by the evidence in the window, with the status it maps to when nothing is wrong. */
const earnedStanding = (
  stats: WindowStats,
  transactionVerified: boolean,
  nowMs: number,
  config: VerificationConfig
): Standing => {
  const latest = stats.latestHealthy
  if (latest !== null && transactionVerified) {
    if (continuous(stats, Date.parse(latest.observedAt), nowMs, config)) {
      return {
        status: "CONTINUOUSLY_VERIFIED",
        level: 4,
        reason: `transaction verified, and ${stats.healthy} healthy probes spread over ${config.windowHours}h with availability ${pct(stats.answered / stats.probes)}`
      }
    }
    return {
      status: "TRANSACTION_VERIFIED",
      level: 3,
      reason: "a payment to this resource succeeded and it answers with a valid x402 challenge"
    }
  }
  if (latest !== null) {
    return {
      status: "PAYMENT_VERIFIED",
      level: 2,
      reason: "answers 402 with a decodable x402 challenge holding an acceptable payment option"
    }
  }
  if (stats.answered > 0) return { status: "LIVE", level: 1, reason: "answers, but without a valid x402 challenge" }
  if (stats.probes > 0) return { status: "VALIDATING", level: 0, reason: "probed, but no answer yet" }
  return { status: "DISCOVERED", level: 0, reason: `no probe evidence in the last ${config.windowHours}h` }
}

/**
 * The state machine of docs/decisions.md. Conditions override the earned status in this order:
 * QUARANTINED by an operator (it holds whatever the probes see, until an operator lifts it),
 * QUARANTINED (a challenge in the window contradicted the catalog and not enough agreed since:
 * `quarantineLifted`), OFFLINE (the last N probes could
 * not connect), DEGRADED (a payment-verified resource whose healthy share fell below the
 * threshold). The level stays the one earned, so a recovery returns to it.
 */
export const deriveStanding = (
  stats: WindowStats,
  transactionVerified: boolean,
  nowMs: number,
  config: StatusRules,
  operatorQuarantine: OperatorQuarantine | null = null
): Standing => {
  const earned = earnedStanding(stats, transactionVerified, nowMs, config)
  if (operatorQuarantine !== null) {
    return {
      status: "QUARANTINED",
      level: earned.level,
      reason: `quarantined by operator ${operatorQuarantine.actor}: ${operatorQuarantine.reason}`
    }
  }
  if (stats.contradiction !== null && !quarantineLifted(stats.contradiction, config)) {
    return { status: "QUARANTINED", level: earned.level, reason: quarantineReason(stats.contradiction, config) }
  }
  if (stats.trailingConnectFailures >= config.offlineAfterFailures) {
    return {
      status: "OFFLINE",
      level: earned.level,
      reason: `the last ${stats.trailingConnectFailures} probes failed to connect or timed out`
    }
  }
  const healthyShare = stats.probes === 0 ? 0 : stats.healthy / stats.probes
  if (earned.level >= 2 && healthyShare < config.degradedBelow) {
    return {
      status: "DEGRADED",
      level: earned.level,
      reason: `healthy in ${stats.healthy} of ${stats.probes} probes over ${config.windowHours}h (${pct(healthyShare)}), below ${pct(config.degradedBelow)}`
    }
  }
  return earned
}
