/**
 * When a resource is probed next. Each resource has a fixed phase in the interval, a hash of its
 * id, so a catalog's probes spread evenly over the interval instead of bursting at a cycle's
 * start, and every instance (and a restart) computes the same slot. No I/O.
 */

/** The resource's phase: where in each interval its probe falls. */
export const phaseOf = (id: string, intervalMs: number) => {
  let h = 2166136261
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619)
  return (h >>> 0) % intervalMs
}

/**
 * The next due time after a probe at `nowMs`: the resource's first slot at least half an interval
 * away. On schedule (a probe runs at most half an interval late) that is exactly one interval
 * after the slot it ran in, so each resource is probed once per interval; the first probe of a
 * new resource (due at once) moves it into its slot; a backlog skips to the next slot.
 */
export const nextDue = (id: string, nowMs: number, intervalMs: number) => {
  const earliest = nowMs + Math.floor(intervalMs / 2)
  const phase = phaseOf(id, intervalMs)
  const base = earliest - (((earliest % intervalMs) + intervalMs) % intervalMs)
  const slot = base + phase
  return slot >= earliest ? slot : slot + intervalMs
}

/**
 * How many intervals apart an untrusted entry is probed (docs/trust.md): 1 while healthy, doubling
 * with each whole interval it has stayed unhealthy since `unhealthySinceMs`, at most `maxIntervals`.
 * A dead target a stranger added so costs the schedule less and less until it is retired.
 */
export const backoffIntervals = (
  unhealthySinceMs: number | undefined,
  nowMs: number,
  intervalMs: number,
  maxIntervals: number
) =>
  unhealthySinceMs === undefined
    ? 1
    : Math.min(maxIntervals, 2 ** Math.floor(Math.max(0, nowMs - unhealthySinceMs) / intervalMs))

/**
 * Seconds until a caller's validation of a catalog resource may be recorded, given the times
 * (epoch ms) of its newest observations, newest first, and `perInterval`, the observations callers
 * may add per probe interval beside the schedule's one (`probes.validationsPerInterval`); null when
 * it may be now. A resource may hold `perInterval + 1` observations within any interval: with the
 * default of 1, callers together add as many as the schedule and can never outweigh it. Once used,
 * the allowance frees up when the oldest observation counted leaves the interval.
 */
export const validationRetryAfter = (
  newestObservedMs: ReadonlyArray<number>,
  nowMs: number,
  intervalMs: number,
  perInterval: number
): number | null => {
  const counted = newestObservedMs.slice(0, perInterval + 1).filter((at) => at > nowMs - intervalMs)
  if (counted.length < perInterval + 1) return null
  return Math.max(1, Math.ceil((Math.min(...counted) + intervalMs - nowMs) / 1000))
}
