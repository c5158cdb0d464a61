import { Clock, Effect, Ref } from "effect"
import type { FacilitatorEntry } from "../config.js"
import { FacilitatorsNotReady } from "../domain/errors.js"
import type { FacilitatorStatus } from "../domain/x402.js"
import type { InstrumentsShape } from "../telemetry/Instruments.js"
import { advertises, type Capabilities, capabilitiesOf } from "./capabilities.js"
import type { BackendClient, BackendFailure, RawSupported } from "./FacilitatorClient.js"
import { type BackendProgress, kindsIncomplete, notKnownRetryAfter } from "./readiness.js"

/** One configured backend as the pool holds it: HTTP or embedded, behind one interface. */
export interface Backend {
  readonly config: FacilitatorEntry
  readonly client: BackendClient
}

export interface BackendState {
  readonly healthy: boolean
  /** The first `/supported` poll has completed (answered or failed). */
  readonly polled: boolean
  /** `/supported` answered at least once: the capabilities are what the backend said, not a blank. */
  readonly answered: boolean
  readonly lastCheckedAt: string | null
  readonly lastError: string | null
  /** Last capabilities the backend advertised; kept while it is unhealthy so status still shows them. */
  readonly capabilities: Capabilities
  /** Verify and settle failures in a row since its last success or good poll (the circuit breaker's count). */
  readonly failureStreak: number
}

const unchecked: BackendState = {
  healthy: false,
  polled: false,
  answered: false,
  lastCheckedAt: null,
  lastError: null,
  capabilities: { kinds: [], extensions: [], signers: {} },
  failureStreak: 0
}

/** Failures that say the backend itself is unwell (rather than that it refused one request). */
const marksUnhealthy = (failure: BackendFailure) =>
  !(failure.kind === "HttpStatus" && failure.status !== null && failure.status < 500)

/**
 * Consecutive verify or settle failures (5xx, timeouts, broken answers) after which a backend is
 * marked unhealthy until its next good `/supported` poll. One payload can make a backend answer
 * 500; it takes failures of several requests in a row, with no success between, to take it out
 * for everyone. A refused connection says nothing about a payload, so it marks it at once.
 */
export const BREAKER_THRESHOLD = 3

/** What a verify or settle failure does to a backend's health, given its streak of failures before it. */
export const healthAfterFailure = (
  failure: BackendFailure,
  streak: number
): { readonly streak: number; readonly unhealthy: boolean } => {
  if (!marksUnhealthy(failure)) return { streak, unhealthy: false }
  const next = streak + 1
  return { streak: next, unhealthy: failure.kind === "Unreachable" || next >= BREAKER_THRESHOLD }
}

/**
 * A backend's state as the pool acts on it: its last poll, unless the backend itself says it may
 * not be chosen now (the embedded facilitator's fee account below its floor), which counts at once.
 */
const effective = (backend: Backend, state: BackendState): BackendState => {
  const reason = backend.client.unhealthyReason?.() ?? null
  return reason === null ? state : { ...state, healthy: false, lastError: reason }
}

/** One backend's row of `/x402/facilitators`: never its apiKey. */
export const statusOf = (
  backend: Backend,
  state: BackendState,
  embedded: FacilitatorStatus["embedded"]
): FacilitatorStatus => ({
  id: backend.config.id,
  url: backend.client.url,
  healthy: state.healthy,
  lastCheckedAt: state.lastCheckedAt,
  lastError: state.lastError,
  capabilityCount: state.capabilities.kinds.length,
  kinds: state.capabilities.kinds,
  ...(embedded === undefined ? {} : { embedded })
})

/** Each call of a backend counted by its configured id, the call and `ok` or the failure's kind (bounded labels). */
export const counted = (client: BackendClient, instruments: InstrumentsShape): BackendClient => {
  const count =
    (call: "supported" | "verify" | "settle") =>
    <A, R>(effect: Effect.Effect<A, BackendFailure, R>) =>
      Effect.tapBoth(effect, {
        onSuccess: () => instruments.facilitatorCall(client.id, call, "ok"),
        onFailure: (failure) => instruments.facilitatorCall(client.id, call, failure.kind)
      })
  return {
    ...client,
    supported: (timeout) => count("supported")(client.supported(timeout)),
    verify: (body, timeout) => count("verify")(client.verify(body, timeout)),
    settle: (body, timeout) => count("settle")(client.settle(body, timeout))
  }
}

/** A snapshot of every backend's state, read once: what one decision of the pool looks at. */
export interface StatesView {
  /** The backend's state as the pool acts on it (`effective`). */
  readonly of: (backend: Backend) => BackendState
  /** Each backend's progress toward its first answer, for readiness and the not-ready 503. */
  readonly progress: ReadonlyArray<BackendProgress>
}

/** The 503 for a question some backend has not answered yet: when to retry comes from the poll interval. */
export const notReady = (progress: ReadonlyArray<BackendProgress>, what: string, pollSeconds: number) =>
  new FacilitatorsNotReady({
    message: `${what}: not every configured facilitator has answered /supported yet, so whether one supports it is not known; retry shortly`,
    retryAfterSeconds: notKnownRetryAfter(progress, pollSeconds)
  })

/**
 * Backends to try for a kind, in config order: healthy ones that advertise it. `unknown` is the
 * 503 to answer when none advertises it while some backend has not said yet what it supports.
 */
export const eligibleIn = (
  backends: ReadonlyArray<Backend>,
  { of, progress }: StatesView,
  network: string,
  scheme: string,
  pollSeconds: number
) => {
  const advertising = backends.filter((b) => advertises(of(b).capabilities, network, scheme))
  return {
    advertised: advertising.length > 0,
    healthy: advertising.filter((b) => of(b).healthy),
    unknown: kindsIncomplete(progress)
      ? notReady(progress, `scheme "${scheme}" on network "${network}"`, pollSeconds)
      : null
  }
}

/** The pool's record of its backends' health: polls, the circuit breaker's streaks, and views of them. */
export interface BackendStates {
  readonly view: Effect.Effect<StatesView>
  /** A `/supported` answer: healthy, with what it advertised. */
  readonly polled: (backendId: string, raw: RawSupported) => Effect.Effect<void>
  /** A failed `/supported` poll: unhealthy until the next good one. */
  readonly pollFailed: (failure: BackendFailure) => Effect.Effect<void>
  /** A verify or settle failure counts toward the breaker; only a streak (or a refused connection) marks the backend. */
  readonly callFailed: (failure: BackendFailure) => Effect.Effect<void>
  /** A verify or settle answered: the streak starts again. */
  readonly callSucceeded: (backendId: string) => Effect.Effect<void>
}

export const makeBackendStates = (backends: ReadonlyArray<Backend>) =>
  Effect.gen(function* () {
    const states = yield* Ref.make<ReadonlyMap<string, BackendState>>(
      new Map(backends.map((b) => [b.config.id, unchecked]))
    )
    const nowIso = Clock.currentTimeMillis.pipe(Effect.map((ms) => new Date(ms).toISOString()))
    const update = (id: string, f: (s: BackendState) => BackendState) =>
      Ref.update(states, (map) => new Map(map).set(id, f(map.get(id) ?? unchecked)))
    const at = (f: (at: string) => Effect.Effect<void>) => Effect.flatMap(nowIso, f)

    return {
      view: Effect.map(Ref.get(states), (map) => ({
        of: (b: Backend) => effective(b, map.get(b.config.id) ?? unchecked),
        progress: backends.map((b) => {
          const s = map.get(b.config.id) ?? unchecked
          return { id: b.config.id, polled: s.polled, answered: s.answered, lastError: s.lastError }
        })
      })),
      polled: (backendId, raw) =>
        at((lastCheckedAt) =>
          update(backendId, () => ({
            healthy: true,
            polled: true,
            answered: true,
            lastCheckedAt,
            lastError: null,
            capabilities: capabilitiesOf(raw),
            failureStreak: 0
          }))
        ),
      pollFailed: (failure) =>
        at((lastCheckedAt) =>
          update(failure.backendId, (s) => ({
            ...s,
            healthy: false,
            polled: true,
            lastCheckedAt,
            lastError: failure.detail
          }))
        ),
      // Its detail is the backend's last error either way, so operators see it.
      callFailed: (failure) =>
        at((lastCheckedAt) =>
          update(failure.backendId, (s) => {
            const { streak, unhealthy } = healthAfterFailure(failure, s.failureStreak)
            return unhealthy
              ? { ...s, healthy: false, polled: true, lastCheckedAt, lastError: failure.detail, failureStreak: streak }
              : { ...s, lastError: failure.detail, failureStreak: streak }
          })
        ),
      callSucceeded: (backendId) => update(backendId, (s) => (s.failureStreak === 0 ? s : { ...s, failureStreak: 0 }))
    } satisfies BackendStates
  })
