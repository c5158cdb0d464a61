/**
 * How far the pool has got in learning what its backends support. A kind no backend advertises is
 * only unsupported (422) once every backend has said what it supports; before that it is merely
 * not known yet (503 FACILITATORS_NOT_READY, retry), since a backend whose first `/supported`
 * answer is slow or that was down at start may well support it.
 */
export interface BackendProgress {
  readonly id: string
  /** The first `/supported` poll has completed, answered or failed. */
  readonly polled: boolean
  /** `/supported` has answered at least once, so the backend's kinds are known. */
  readonly answered: boolean
  readonly lastError: string | null
}

export type PoolReadiness = { readonly ready: true } | { readonly ready: false; readonly reason: string }

/** Some backend has never answered `/supported`: a kind nobody advertises may still be supported. */
export const kindsIncomplete = (backends: ReadonlyArray<BackendProgress>) => backends.some((b) => !b.answered)

/**
 * Ready once every backend's first poll has completed and, when backends are configured, at least
 * one has answered: an instance whose every backend is still silent cannot take a payment, one
 * whose other backend answered can (the silent one's kinds stay 503 until it answers).
 */
export const poolReadiness = (backends: ReadonlyArray<BackendProgress>): PoolReadiness => {
  const pending = backends.filter((b) => !b.polled)
  if (pending.length > 0) {
    return {
      ready: false,
      reason: `waiting for the first /supported answer of facilitator(s) ${pending.map((b) => `"${b.id}"`).join(", ")}`
    }
  }
  if (backends.length > 0 && !backends.some((b) => b.answered)) {
    const errors = backends.map((b) => `"${b.id}": ${b.lastError ?? "no answer"}`).join("; ")
    return { ready: false, reason: `no facilitator has answered /supported yet (${errors})` }
  }
  return { ready: true }
}

/**
 * When to ask again about a kind not known yet: in a second while a first poll is still under way
 * (it may answer any moment), else at the next poll of the backends that failed theirs.
 */
export const notKnownRetryAfter = (backends: ReadonlyArray<BackendProgress>, pollIntervalSeconds: number): number =>
  backends.some((b) => !b.polled) ? 1 : Math.max(1, Math.ceil(pollIntervalSeconds))
