import { Clock, Context, Duration, Effect, Layer, Ref, Schedule } from "effect"
import { AppConfig, type FacilitatorBackend } from "../config.js"
import { AllFacilitatorsFailed, FacilitatorsNotReady, NoHealthyFacilitator, UnsupportedPaymentKind } from "../domain/errors.js"
import type { FacilitatorStatus, SettleResponse, SupportedResponse } from "../domain/x402.js"
import { redactorFor } from "../redaction/redact.js"
import { advertises, type Capabilities, capabilitiesOf, mergeSupported } from "./capabilities.js"
import { Instruments, type InstrumentsShape } from "../telemetry/Instruments.js"
import { type BackendClient, type BackendFailure, makeBackendClient } from "./FacilitatorClient.js"
import { type BackendProgress, kindsIncomplete, notKnownRetryAfter, poolReadiness } from "./readiness.js"

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
 * - Indeterminate: a backend may have acted but gave no usable answer; no other backend was tried.
 * - Failed: no eligible backend could be reached (or none was healthy), so none received the payment.
 * - Unsupported: no backend advertises the network and scheme (or none has said yet: not ready).
 * `failures` lists every backend error met on the way, in order.
 */
export type SettleOutcome =
  | { readonly _tag: "Answered"; readonly backendId: string; readonly response: typeof SettleResponse.Type; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Indeterminate"; readonly backendId: string; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Failed"; readonly failures: ReadonlyArray<BackendFailure> }
  | { readonly _tag: "Unsupported"; readonly error: UnsupportedPaymentKind | FacilitatorsNotReady }

/**
 * Whether a settle may move on to the next backend after `failure`.
 *
 * A settle submits a transaction; asking a second backend after the first may have submitted it
 * risks answering "failed" for a payment that went through (the second fails on the used nonce)
 * and paying its fee twice. (The buyer cannot be charged twice: the Soroban auth entry carries a
 * nonce, so the signed transfer executes at most once on the ledger.) So the pool falls through
 * only when the request provably never arrived: the backend could not be reached at all
 * (connection refused, name not resolved). Any answer with an error status stops there too, 5xx
 * included: a 502 or 504 from a gateway may come after the facilitator behind it submitted. So do
 * a timeout, a connection broken mid-answer and a body that is not a settle result. The pool
 * stops at that backend and the journal marks the entry indeterminate.
 */
export const settleMayFallThrough = (failure: BackendFailure): boolean => failure.kind === "Unreachable"

/** Failures that say the backend itself is unwell (rather than that it refused one request). */
const marksUnhealthy = (failure: BackendFailure) =>
  !(failure.kind === "HttpStatus" && failure.status !== null && failure.status < 500)

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
}

const unchecked: BackendState = {
  healthy: false,
  polled: false,
  answered: false,
  lastCheckedAt: null,
  lastError: null,
  capabilities: { kinds: [], extensions: [], signers: {} }
}

/** The URL as an operator configured it, minus any credentials embedded in it. */
const displayUrl = (url: string) => {
  try {
    const parsed = new URL(url)
    parsed.username = ""
    parsed.password = ""
    return parsed.toString()
  } catch {
    return "(unparsable url)"
  }
}

const listFailures = (failures: ReadonlyArray<BackendFailure>) => failures.map((f) => f.message).join("; ")

const unsupported = (network: string, scheme: string) =>
  new UnsupportedPaymentKind({
    message: `no configured facilitator supports scheme "${scheme}" on network "${network}"`
  })

interface Backend {
  readonly config: FacilitatorBackend
  readonly client: BackendClient
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
    const backends: ReadonlyArray<Backend> =
      config.facilitators.map((b) => ({ config: b, client: counted(makeBackendClient(b, redactor), instruments) }))
    const states = yield* Ref.make<ReadonlyMap<string, BackendState>>(new Map(backends.map((b) => [b.config.id, unchecked])))

    const nowIso = Clock.currentTimeMillis.pipe(Effect.map((ms) => new Date(ms).toISOString()))
    const update = (id: string, f: (s: BackendState) => BackendState) =>
      Ref.update(states, (map) => new Map(map).set(id, f(map.get(id) ?? unchecked)))

    const markFailed = (failure: BackendFailure) =>
      Effect.flatMap(nowIso, (at) =>
        update(failure.backendId, (s) => ({ ...s, healthy: false, polled: true, lastCheckedAt: at, lastError: failure.detail }))
      )

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
              capabilities: capabilitiesOf(raw)
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
            healthy: advertising.filter((b) => map.get(b.config.id)?.healthy === true),
            unknown: kindsIncomplete(progress) ? notReady(progress, `scheme "${scheme}" on network "${network}"`) : null
          }
        })
      )

    const noneHealthy = (network: string, scheme: string) =>
      new NoHealthyFacilitator({
        message: `every facilitator that supports "${scheme}" on "${network}" is currently unhealthy`
      })

    type KindRefusal = UnsupportedPaymentKind | FacilitatorsNotReady | NoHealthyFacilitator
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
          if (result._tag === "Right") return result.right
          failures.push(result.left)
          if (marksUnhealthy(result.left)) yield* markFailed(result.left)
        }
        return yield* Effect.fail(
          new AllFacilitatorsFailed({ message: `every eligible facilitator failed: ${listFailures(failures)}` })
        )
      }
    )

    const settle = Effect.fn("FacilitatorPool.settle")(function* (body: unknown, network: string, scheme: string) {
        const { advertised, healthy, unknown } = yield* eligible(network, scheme)
        if (!advertised) return { _tag: "Unsupported", error: unknown ?? unsupported(network, scheme) } satisfies SettleOutcome
        const failures: Array<BackendFailure> = []
        for (const backend of healthy) {
          const result = yield* Effect.either(backend.client.settle(body, options.settleTimeout))
          if (result._tag === "Right") {
            return { _tag: "Answered", backendId: backend.config.id, response: result.right, failures } satisfies SettleOutcome
          }
          failures.push(result.left)
          if (marksUnhealthy(result.left)) yield* markFailed(result.left)
          if (!settleMayFallThrough(result.left)) {
            return { _tag: "Indeterminate", backendId: backend.config.id, failures } satisfies SettleOutcome
          }
        }
        return { _tag: "Failed", failures } satisfies SettleOutcome
    })

    const status = Ref.get(states).pipe(
      Effect.map((map) =>
        backends.map((b): FacilitatorStatus => {
          const s = map.get(b.config.id) ?? unchecked
          return {
            id: b.config.id,
            url: displayUrl(b.config.url),
            healthy: s.healthy,
            lastCheckedAt: s.lastCheckedAt,
            lastError: s.lastError,
            capabilityCount: s.capabilities.kinds.length,
            kinds: s.capabilities.kinds
          }
        })
      )
    )

    /** The union of healthy backends' kinds; 503 while backends are configured and none has answered yet. */
    const supported: Effect.Effect<SupportedResponse, FacilitatorsNotReady> = Ref.get(states).pipe(
      Effect.flatMap((map) => {
        const progress = progressOf(map)
        if (progress.length > 0 && !progress.some((b) => b.answered)) return Effect.fail(notReady(progress, "the supported kinds"))
        return Effect.succeed(mergeSupported(backends.flatMap((b) => {
          const s = map.get(b.config.id)
          return s?.healthy === true ? [s.capabilities] : []
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
      /** Forwards a settle body; see `SettleOutcome` and `settleMayFallThrough`. */
      settle
    }
  })

export class FacilitatorPool extends Context.Tag("sextant/FacilitatorPool")<
  FacilitatorPool,
  Effect.Effect.Success<ReturnType<typeof make>>
>() {
  /** A pool polling on its own timings: the live one, or a test's. */
  static readonly fromOptions = (options: PoolOptions) => Layer.scoped(FacilitatorPool, make(options))
  /** The pool with the configured poll interval (`facilitatorPollSeconds`): how soon a backend marked unhealthy is tried again. */
  static readonly Live = Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      FacilitatorPool.fromOptions({ ...defaultPoolOptions, pollInterval: Duration.seconds(config.facilitatorPollSeconds) })
    )
  )
}
