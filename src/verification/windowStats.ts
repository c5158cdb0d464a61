/** Settlement and receipt outcomes inside the window. */
export interface EconomicCounts {
  readonly total: number
  readonly successes: number
}

/**
 * The newest challenge in the window that contradicted the catalog, and the challenges that agreed
 * with the catalog after it (status.ts: they lift its quarantine once enough, spread out enough).
 */
export interface ContradictionRun {
  readonly atMs: number
  readonly reason: string
  readonly agreeing: number
  readonly firstAgreeingMs: number | null
  readonly lastAgreeingMs: number | null
}

/** Counts over one resource's window (rollingWindow.ts `statsAt`), the input of both metrics and status. */
export interface WindowStats {
  /** Probes that were sent; a refused target is the service's own decision, not evidence. */
  readonly probes: number
  /** Probes that got any HTTP answer. */
  readonly answered: number
  readonly healthy: number
  /** Nearest-rank percentiles of answered probes' latencies, within the latency sketch's bound. */
  readonly p50LatencyMs: number | null
  readonly p95LatencyMs: number | null
  /** Healthy probes whose price equals the advertised one. */
  readonly priceMatches: number
  readonly latestHealthy: { readonly observedAt: string; readonly priceUsd: number | null } | null
  readonly firstHealthyMs: number | null
  readonly lastObservedMs: number | null
  /** Probes at the end of the window that could not connect or timed out, uninterrupted. */
  readonly trailingConnectFailures: number
  /** The newest contradiction in the window and what agreed since; null when no challenge in the window contradicted. */
  readonly contradiction: ContradictionRun | null
  readonly economicTotal: number
  readonly economicSuccesses: number
}
