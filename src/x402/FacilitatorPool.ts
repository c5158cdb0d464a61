import { Clock, Context, Duration, Effect, Either, Layer, Ref, Schedule } from "effect"
import { AppConfig, type FacilitatorEntry, isEmbedded } from "../config.js"
import { makeEmbeddedBackend } from "../facilitator/embedded.js"
import { AllFacilitatorsFailed, FacilitatorsNotReady, NoHealthyFacilitator, UnsupportedPaymentKind } from "../domain/errors.js"
import { SETTLEMENT_PENDING } from "../domain/settlements.js"
import type { FacilitatorStatus, SettleResponse, SupportedResponse, VerifyResponse } from "../domain/x402.js"
import { redactorFor } from "../redaction/redact.js"
import { advertises, type Capabilities, capabilitiesOf, mergeSupported } from "./capabilities.js"
import { Instruments, type InstrumentsShape } from "../telemetry/Instruments.js"
import { type BackendClient, type BackendFailure, makeBackendClient } from "./FacilitatorClient.js"
import { type BackendProgress, kindsIncomplete, notKnownRetryAfter, type PoolReadiness, poolReadiness } from "./readiness.js"

/** Refusals of a kind no backend can serve: 503 not known yet, 422 unsupported, 502 none healthy. */
export type KindRefusal = UnsupportedPaymentKind | FacilitatorsNotReady | NoHealthyFacilitator

/** The configured facilitators behind one pool: polled for what they support, failed over with care. */
export interface FacilitatorPoolShape {
  /** Union of healthy backends' kinds, de-duplicated by network and scheme; 503 until one has answered. */
  readonly supported: Effect.Effect<SupportedResponse, FacilitatorsNotReady>
  /** Whether every backend was polled once and one answered (`/health/ready`). */
  readonly readiness: Effect.Effect<PoolReadiness>
  /** Per-backend health for `/x402/facilitators`; never the apiKey. */
  readonly status: Effect.Effect<ReadonlyArray<FacilitatorStatus>>
  /** The facilitator section of `/health/dependencies`. */
  readonly health: Effect.Effect<{ readonly configured: number; readonly healthy: number; readonly backends: ReadonlyArray<FacilitatorStatus> }>
  /** Polls every backend now; the schedule keeps running. */
  readonly refresh: Effect.Effect<void>
  /** Fails as verify and settle would when nothing can serve the kind. */
  readonly checkKind: (network: string, scheme: string) => Effect.Effect<void, KindRefusal>
  /** Forwards the stock body to the first healthy backend that answers; 422 unsupported, 502 all failed. */
  readonly verify: (
    body: { readonly paymentRequirements: { readonly network: string; readonly scheme: string } }
  ) => Effect.Effect<typeof VerifyResponse.Type, KindRefusal | AllFacilitatorsFailed>
  /** Forwards a settle body; see `SettleOutcome`, `settleMayFallThrough` and `SettleGuard`. */
  readonly settle: (body: unknown, network: string, scheme: string, guard: SettleGuard) => Effect.Effect<SettleOutcome>
  /**
   * Sends a settle to one named backend only, as a retry of a payload it answered `settlement_pending`
   * for. Left when the backend is gone or gave no usable answer.
   */
  readonly settleVia: (
    backendId: string,
    body: unknown,
    timeout: Duration.DurationInput
  ) => Effect.Effect<Either.Either<typeof SettleResponse.Type, string>>
}

export class FacilitatorPool extends Context.Tag("sextant/FacilitatorPool")<FacilitatorPool, FacilitatorPoolShape>() {
  /** A pool polling on its own timings: the live one, or a test's. */
  static readonly fromOptions = (options: PoolOptions) => Layer.scoped(FacilitatorPool, make(options))
  /** The pool with the configured poll interval (`facilitatorPollSeconds`): how soon a backend marked unhealthy is tried again. */
  static readonly Live = Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      FacilitatorPool.fromOptions({ ...defaultPoolOptions, pollInterval: Duration.seconds(config.facilitatorPollSeconds) })
    )
  )
}

export interface PoolOptions {
  /** Time between two `/supported` polls of every backend. */
  readonly pollInterval: Duration.DurationInput
  /** Bound on `/supported` and `/verify` calls. */
  readonly requestTimeout: Duration.DurationInput
  /**
   * Bound on `/settle`. A Stellar facilitator waits for the ledger to confirm (up to the
   * requirements' maxTimeoutSeconds, 60 s by default) before answering, so this is longer.
   */
  readonly settleTimeout: Duration.DurationInput
}

export const defaultPoolOptions: PoolOptions = {
  pollInterval: Duration.seconds(30),
  requestTimeout: Duration.seconds(10),
  settleTimeout: Duration.seconds(90)
}

/**
 * Result of forwarding one settle. Not an error channel: the settlement journal records each case
 * differently.
 * - Answered: a backend gave a settle result (success or a refusal); it is the answer.
 * - Executed: a backend gave no usable answer, but the ledger shows the payment executed, in
 *   `transaction`; that is the answer.
 * - Indeterminate: a backend may have acted, gave no usable answer, and the ledger could not tell
 *   (unreadable, no time left, or no further backend to try).
 * - Failed: no eligible backend could be reached (or none was healthy), so none received the payment.
 * - Unsupported: no backend advertises the network and scheme (or none has said yet: not ready).
 * `failures` lists every backend error met on the way, in order.
 */
export type SettleOutcome =
  | { readonly _tag: "Answered"; readonly backendId: string; readonly response: typeof SettleResponse.Type; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Executed"; readonly backendId: string; readonly transaction: string; readonly reason: string; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Indeterminate"; readonly backendId: string; readonly reason: string; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Failed"; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Unsupported"; readonly error: UnsupportedPaymentKind | FacilitatorsNotReady }

/** What the ledger says about a payment after a backend left its fate unknown. */
export type LedgerVerdict =
  | { readonly _tag: "Executed"; readonly transaction: string; readonly reason: string }
  | { readonly _tag: "NotExecuted"; readonly reason: string }
  | { readonly _tag: "Unknown"; readonly reason: string }

/**
 * How a settle may go on after a backend gave no usable answer (docs/decisions.md, settle
 * failover). The payer's authorisation carries a single-use nonce, so at most one submission of
 * the signed payload can execute: asking the ledger first, and sending the same payload to the
 * next backend only while the nonce is unconsumed, can never pay twice.
 */
export interface SettleGuard {
  /** Epoch ms by which the settle is answered, whatever the backends do. */
  readonly deadlineMs: number
  /** Kept back from each backend call for the ledger reads that may follow it. */
  readonly ledgerReserveMs: number
  /** Reads the ledger, within `withinMs`. */
  readonly verdict: (withinMs: number) => Effect.Effect<LedgerVerdict>
  /**
   * Runs before the payload goes to a further backend: the journal judges the attempt's fee
   * against the budgets, then records and charges it. Null when it did; else why the attempt is
   * not made (a budget it would exceed, or a journal that could not record it).
   */
  readonly beforeRetry: (backendId: string, reason: string) => Effect.Effect<string | null>
}

/**
 * Whether a settle may move on to the next backend after `failure`.
 *
 * A settle submits a transaction; asking a second backend after the first may have submitted it
 * risks answering "failed" for a payment that went through (the second fails on the used nonce)
 * and paying its fee twice. (The buyer cannot be charged twice: the Soroban auth entry carries a
 * nonce, so the signed transfer executes at most once on the ledger.) So the pool falls through
 * without more ado only when the request provably never arrived: the backend could not be reached
 * at all (connection refused, name not resolved). Any answer with an error status may come after
 * the payment was submitted, 5xx included (a 502 or 504 from a gateway may come after the
 * facilitator behind it submitted); so may a timeout, a connection broken mid-answer and a body
 * that is not a settle result. After those the pool asks the ledger (`SettleGuard`) before it goes
 * on, and stops as indeterminate when the ledger cannot tell.
 */
export const settleMayFallThrough = (failure: BackendFailure): boolean => failure.kind === "Unreachable"

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
export const healthAfterFailure = (failure: BackendFailure, streak: number): { readonly streak: number; readonly unhealthy: boolean } => {
  if (!marksUnhealthy(failure)) return { streak, unhealthy: false }
  const next = streak + 1
  return { streak: next, unhealthy: failure.kind === "Unreachable" || next >= BREAKER_THRESHOLD }
}

interface BackendState {
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

const listFailures = (failures: ReadonlyArray<BackendFailure>) => failures.map((f) => f.message).join("; ")

const unsupported = (network: string, scheme: string) =>
  new UnsupportedPaymentKind({
    message: `no configured facilitator supports scheme "${scheme}" on network "${network}"`
  })

interface Backend {
  readonly config: FacilitatorEntry
  readonly client: BackendClient
}

/**
 * A backend's state as the pool acts on it: its last poll, unless the backend itself says it may
 * not be chosen now (the embedded facilitator's fee account below its floor), which counts at once.
 */
const effective = (backend: Backend, state: BackendState): BackendState => {
  const reason = backend.client.unhealthyReason?.() ?? null
  return reason === null ? state : { ...state, healthy: false, lastError: reason }
}

/** Each call of a backend counted by its configured id, the call and `ok` or the failure's kind (bounded labels). */
const counted = (client: BackendClient, instruments: InstrumentsShape): BackendClient => {
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

const make = (options: PoolOptions) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const instruments = yield* Instruments
    const redactor = redactorFor(config)
    // One interface for both kinds: from here on the pool does not care which it holds.
    const backends: ReadonlyArray<Backend> = yield* Effect.forEach(config.facilitators, (b, i) =>
      Effect.map(isEmbedded(b) ? makeEmbeddedBackend(b, i, config, instruments) : Effect.succeed(makeBackendClient(b, redactor)), (client) => ({
        config: b,
        client: counted(client, instruments)
      }))
    )
    const states = yield* Ref.make<ReadonlyMap<string, BackendState>>(new Map(backends.map((b) => [b.config.id, unchecked])))

    const nowIso = Clock.currentTimeMillis.pipe(Effect.map((ms) => new Date(ms).toISOString()))
    const update = (id: string, f: (s: BackendState) => BackendState) =>
      Ref.update(states, (map) => new Map(map).set(id, f(map.get(id) ?? unchecked)))

    const markFailed = (failure: BackendFailure) =>
      Effect.flatMap(nowIso, (at) =>
        update(failure.backendId, (s) => ({ ...s, healthy: false, polled: true, lastCheckedAt: at, lastError: failure.detail }))
      )

    /**
     * A verify or settle failure counts toward the breaker; only a streak (or a refused connection)
     * marks the backend. Its detail is the backend's last error either way, so operators see it.
     */
    const recordCallFailure = (failure: BackendFailure) =>
      Effect.flatMap(nowIso, (at) =>
        update(failure.backendId, (s) => {
          const { streak, unhealthy } = healthAfterFailure(failure, s.failureStreak)
          return unhealthy
            ? { ...s, healthy: false, polled: true, lastCheckedAt: at, lastError: failure.detail, failureStreak: streak }
            : { ...s, lastError: failure.detail, failureStreak: streak }
        })
      )
    const recordCallSuccess = (backendId: string) => update(backendId, (s) => (s.failureStreak === 0 ? s : { ...s, failureStreak: 0 }))

    const poll = (backend: (typeof backends)[number]) =>
      backend.client.supported(options.requestTimeout).pipe(
        Effect.flatMap((raw) =>
          Effect.flatMap(nowIso, (at) =>
            update(backend.config.id, () => ({
              healthy: true,
              polled: true,
              answered: true,
              lastCheckedAt: at,
              lastError: null,
              capabilities: capabilitiesOf(raw),
              failureStreak: 0
            }))
          )
        ),
        Effect.catchAll(markFailed)
      )

    const refresh = Effect.forEach(backends, poll, { concurrency: "unbounded", discard: true }).pipe(
      Effect.withSpan("FacilitatorPool.refresh")
    )

    const progressOf = (map: ReadonlyMap<string, BackendState>): Array<BackendProgress> =>
      backends.map((b) => {
        const s = map.get(b.config.id) ?? unchecked
        return { id: b.config.id, polled: s.polled, answered: s.answered, lastError: s.lastError }
      })

    const pollSeconds = Duration.toSeconds(options.pollInterval)
    const notReady = (progress: ReadonlyArray<BackendProgress>, what: string) =>
      new FacilitatorsNotReady({
        message: `${what}: not every configured facilitator has answered /supported yet, so whether one supports it is not known; retry shortly`,
        retryAfterSeconds: notKnownRetryAfter(progress, pollSeconds)
      })

    /**
     * Backends to try for a kind, in config order: healthy ones that advertise it. `unknown` is the
     * 503 to answer when none advertises it while some backend has not said yet what it supports.
     */
    const eligible = (network: string, scheme: string) =>
      Ref.get(states).pipe(
        Effect.map((map) => {
          const advertising = backends.filter((b) => advertises((map.get(b.config.id) ?? unchecked).capabilities, network, scheme))
          const progress = progressOf(map)
          return {
            advertised: advertising.length > 0,
            healthy: advertising.filter((b) => effective(b, map.get(b.config.id) ?? unchecked).healthy),
            unknown: kindsIncomplete(progress) ? notReady(progress, `scheme "${scheme}" on network "${network}"`) : null
          }
        })
      )

    const noneHealthy = (network: string, scheme: string) =>
      new NoHealthyFacilitator({
        message: `every facilitator that supports "${scheme}" on "${network}" is currently unhealthy`
      })

    /**
     * The healthy backends for a kind; 503 when none advertises it yet but some backend has not
     * answered, 422 when none advertises it, 502 when none of those is healthy.
     */
    const checkKind = (network: string, scheme: string): Effect.Effect<ReadonlyArray<Backend>, KindRefusal> =>
      Effect.flatMap(eligible(network, scheme), ({ advertised, healthy, unknown }): Effect.Effect<ReadonlyArray<Backend>, KindRefusal> =>
        !advertised
          ? Effect.fail(unknown ?? unsupported(network, scheme))
          : healthy.length === 0
            ? Effect.fail(noneHealthy(network, scheme))
            : Effect.succeed(healthy)
      )

    const verify = Effect.fn("FacilitatorPool.verify")(
      function* (body: { readonly paymentRequirements: { readonly network: string; readonly scheme: string } }) {
        const healthy = yield* checkKind(body.paymentRequirements.network, body.paymentRequirements.scheme)
        const failures: Array<BackendFailure> = []
        // Verify changes nothing, so any failure may fall through to the next backend.
        for (const backend of healthy) {
          const result = yield* Effect.either(backend.client.verify(body, options.requestTimeout))
          if (result._tag === "Right") return yield* Effect.as(recordCallSuccess(backend.config.id), result.right)
          failures.push(result.left)
          yield* recordCallFailure(result.left)
        }
        return yield* Effect.fail(
          new AllFacilitatorsFailed({ message: `every eligible facilitator failed: ${listFailures(failures)}` })
        )
      }
    )

    const settle = Effect.fn("FacilitatorPool.settle")(function* (body: unknown, network: string, scheme: string, guard: SettleGuard) {
      const { advertised, healthy, unknown } = yield* eligible(network, scheme)
      if (!advertised) return { _tag: "Unsupported", error: unknown ?? unsupported(network, scheme) } satisfies SettleOutcome
      const failures: Array<BackendFailure> = []
      const remaining = Effect.map(Clock.currentTimeMillis, (now) => guard.deadlineMs - now)
      /** The backend that last left the payment's fate unknown, and why the ledger could not settle the question. */
      let unresolved: { readonly backendId: string; readonly reason: string } | null = null
      const indeterminate = (reason: string) =>
        ({ _tag: "Indeterminate", backendId: unresolved?.backendId ?? "", reason, failures }) satisfies SettleOutcome
      for (const [index, backend] of healthy.entries()) {
        // An even share of the time left for this backend and each one after it, each keeping back
        // the ledger read that may follow it: one silent backend cannot use up the whole deadline.
        const sharing = healthy.length - index
        const budget = Math.min(Duration.toMillis(options.settleTimeout), ((yield* remaining) - guard.ledgerReserveMs * sharing) / sharing)
        if (budget <= 0) {
          if (unresolved !== null) return indeterminate(`${unresolved.reason}, and no time was left before the settle deadline to try another`)
          break
        }
        const withheld = unresolved === null ? null : yield* guard.beforeRetry(backend.config.id, unresolved.reason)
        if (unresolved !== null && withheld !== null) return indeterminate(`${unresolved.reason}, and no further facilitator was tried: ${withheld}`)
        const result = yield* Effect.either(backend.client.settle(body, Duration.millis(budget)))
        if (result._tag === "Right") {
          yield* recordCallSuccess(backend.config.id)
          // A refusal after an earlier backend went silent may be this one losing the race to it
          // (failing on the nonce the earlier submission spent). It is answered only when the
          // ledger shows the earlier submission executed (a success); otherwise the earlier one may
          // still land, so the outcome is left to the reconciler, never journaled `failed`.
          if (unresolved !== null && !result.right.success && result.right.errorReason !== SETTLEMENT_PENDING) {
            const verdict = yield* guard.verdict(Math.max(0, yield* remaining))
            if (verdict._tag === "Executed") return { ...verdict, backendId: unresolved.backendId, failures } satisfies SettleOutcome
            return indeterminate(
              `facilitator "${backend.config.id}" refused it (${result.right.errorReason ?? result.right.errorMessage ?? "success: false"}) ` +
                `after ${unresolved.reason}, and the ledger cannot yet confirm or rule out that earlier submission: ${verdict.reason}`
            )
          }
          return { _tag: "Answered", backendId: backend.config.id, response: result.right, failures } satisfies SettleOutcome
        }
        failures.push(result.left)
        yield* recordCallFailure(result.left)
        if (settleMayFallThrough(result.left)) continue
        const verdict = yield* guard.verdict(Math.max(0, yield* remaining))
        if (verdict._tag === "Executed") return { ...verdict, backendId: backend.config.id, failures } satisfies SettleOutcome
        if (verdict._tag === "Unknown") {
          unresolved = { backendId: backend.config.id, reason: verdict.reason }
          return indeterminate(verdict.reason)
        }
        unresolved = { backendId: backend.config.id, reason: `facilitator "${backend.config.id}" gave no usable answer (${result.left.detail}) and ${verdict.reason}` }
      }
      return unresolved !== null ? indeterminate(`${unresolved.reason}; no other eligible facilitator was left to try`) : ({ _tag: "Failed", failures } satisfies SettleOutcome)
    })

    /**
     * Sends a settle to one named backend only, as a retry of a payload it answered
     * `settlement_pending` for: it reconciles its own broadcast. Never another backend, which would
     * submit the payload a second time. Left when the backend is gone or gave no usable answer.
     */
    const settleVia = Effect.fn("FacilitatorPool.settleVia")(function* (backendId: string, body: unknown, timeout: Duration.DurationInput) {
      const backend = backends.find((b) => b.config.id === backendId)
      if (backend === undefined) return Either.left(`facilitator "${backendId}" is no longer configured`)
      const result = yield* Effect.either(backend.client.settle(body, timeout))
      if (result._tag === "Right") {
        yield* recordCallSuccess(backendId)
        return Either.right(result.right)
      }
      yield* recordCallFailure(result.left)
      return Either.left(`facilitator "${backendId}" gave no usable answer (${result.left.detail})`)
    })

    const status = Ref.get(states).pipe(
      Effect.flatMap((map) =>
        Effect.forEach(backends, (b) =>
          Effect.gen(function* () {
            const s = effective(b, map.get(b.config.id) ?? unchecked)
            const embedded = b.client.embedded === undefined ? undefined : yield* b.client.embedded
            return {
              id: b.config.id,
              url: b.client.url,
              healthy: s.healthy,
              lastCheckedAt: s.lastCheckedAt,
              lastError: s.lastError,
              capabilityCount: s.capabilities.kinds.length,
              kinds: s.capabilities.kinds,
              ...(embedded === undefined ? {} : { embedded })
            } satisfies FacilitatorStatus
          })
        )
      )
    )

    /** The union of healthy backends' kinds; 503 while backends are configured and none has answered yet. */
    const supported: Effect.Effect<SupportedResponse, FacilitatorsNotReady> = Ref.get(states).pipe(
      Effect.flatMap((map) => {
        const progress = progressOf(map)
        if (progress.length > 0 && !progress.some((b) => b.answered)) return Effect.fail(notReady(progress, "the supported kinds"))
        return Effect.succeed(mergeSupported(backends.flatMap((b) => {
          const s = effective(b, map.get(b.config.id) ?? unchecked)
          return s.healthy ? [s.capabilities] : []
        })))
      })
    )

    // First poll at once, then on the schedule, for as long as the layer lives.
    yield* refresh.pipe(Effect.repeat(Schedule.spaced(options.pollInterval)), Effect.forkScoped)

    return {
      /** Union of healthy backends' kinds, de-duplicated by network and scheme; 503 until one has answered. */
      supported,
      /** Whether every backend was polled once and one answered (`/health/ready`). */
      readiness: Effect.map(Ref.get(states), (map) => poolReadiness(progressOf(map))),
      /** Per-backend health for `/x402/facilitators`; never the apiKey. */
      status,
      /** The facilitator section of `/health/dependencies`. */
      health: Effect.map(status, (backends) => ({
        configured: backends.length,
        healthy: backends.filter((b) => b.healthy).length,
        backends
      })),
      /** Polls every backend now; the schedule keeps running. */
      refresh,
      /** Fails as verify and settle would when nothing can serve the kind: 503 not known yet, 422 unsupported, 502 none healthy. */
      checkKind: (network: string, scheme: string) =>
        Effect.asVoid(checkKind(network, scheme)).pipe(Effect.withSpan("FacilitatorPool.checkKind")),
      /** Forwards the stock body to the first healthy backend that answers; 422 unsupported, 502 all failed. */
      verify,
      /** Forwards a settle body; see `SettleOutcome`, `settleMayFallThrough` and `SettleGuard`. */
      settle,
      settleVia
    } satisfies FacilitatorPoolShape
  })
