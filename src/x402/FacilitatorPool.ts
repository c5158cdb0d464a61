import { Context, Duration, Effect, Either, Layer, Schedule } from "effect"
import { AppConfig, isEmbedded } from "../config.js"
import {
  AllFacilitatorsFailed,
  type FacilitatorsNotReady,
  NoHealthyFacilitator,
  UnsupportedPaymentKind
} from "../domain/errors.js"
import type { FacilitatorStatus, SettleResponse, SupportedResponse, VerifyResponse } from "../domain/x402.js"
import { redactorFor } from "../redaction/redact.js"
import { Instruments } from "../telemetry/Instruments.js"
import { type Backend, counted, eligibleIn, makeBackendStates, notReady, statusOf } from "./backendStates.js"
import { mergeSupported } from "./capabilities.js"
import { makeEmbeddedBackend } from "./embedded.js"
import { BackendFailure, makeBackendClient } from "./FacilitatorClient.js"
import { type PoolReadiness, poolReadiness } from "./readiness.js"

export { BREAKER_THRESHOLD, healthAfterFailure } from "./backendStates.js"

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
  readonly health: Effect.Effect<{
    readonly configured: number
    readonly healthy: number
    readonly backends: ReadonlyArray<FacilitatorStatus>
  }>
  /** Polls every backend now; the schedule keeps running. */
  readonly refresh: Effect.Effect<void>
  /** Fails as verify and settle would when nothing can serve the kind. */
  readonly checkKind: (network: string, scheme: string) => Effect.Effect<void, KindRefusal>
  /** Forwards the stock body to the first healthy backend that answers; 422 unsupported, 502 all failed. */
  readonly verify: (body: {
    readonly paymentRequirements: { readonly network: string; readonly scheme: string }
  }) => Effect.Effect<typeof VerifyResponse.Type, KindRefusal | AllFacilitatorsFailed>
  /**
   * The backends a settle of this kind may go to, in config order: the healthy ones that advertise
   * it (none when none is healthy); a refusal when none advertises it (422) or none has said yet (503).
   * Which of them gets the payload, and when a further one may, is the settlement's to decide.
   */
  readonly settleTargets: (
    network: string,
    scheme: string
  ) => Effect.Effect<Either.Either<ReadonlyArray<string>, UnsupportedPaymentKind | FacilitatorsNotReady>>
  /**
   * Sends a settle body to one named backend only, within `timeout` and never longer than the
   * pool's settle timeout, and counts the call in its health. Left when the backend is no longer
   * configured (as unreachable: it received nothing) or gave no usable answer.
   */
  readonly settleVia: (
    backendId: string,
    body: unknown,
    timeout: Duration.DurationInput
  ) => Effect.Effect<Either.Either<typeof SettleResponse.Type, BackendFailure>>
}

export class FacilitatorPool extends Context.Tag("sextant/FacilitatorPool")<FacilitatorPool, FacilitatorPoolShape>() {
  /** A pool polling on its own timings: the live one, or a test's. */
  static readonly fromOptions = (options: PoolOptions) => Layer.scoped(FacilitatorPool, make(options))
  /** The pool with the configured poll interval (`facilitatorPollSeconds`): how soon a backend marked unhealthy is tried again. */
  static readonly Live = Layer.unwrapEffect(
    Effect.map(AppConfig, (config) =>
      FacilitatorPool.fromOptions({
        ...defaultPoolOptions,
        pollInterval: Duration.seconds(config.facilitatorPollSeconds)
      })
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

const listFailures = (failures: ReadonlyArray<BackendFailure>) => failures.map((f) => f.message).join("; ")

const noneHealthy = (network: string, scheme: string) =>
  new NoHealthyFacilitator({
    message: `every facilitator that supports "${scheme}" on "${network}" is currently unhealthy`
  })

const unsupported = (network: string, scheme: string) =>
  new UnsupportedPaymentKind({
    message: `no configured facilitator supports scheme "${scheme}" on network "${network}"`
  })

const make = (options: PoolOptions) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const instruments = yield* Instruments
    const redactor = redactorFor(config)
    // One interface for both kinds: from here on the pool does not care which it holds.
    const backends: ReadonlyArray<Backend> = yield* Effect.forEach(config.facilitators, (b, i) =>
      Effect.map(
        isEmbedded(b) ? makeEmbeddedBackend(b, i, config, instruments) : Effect.succeed(makeBackendClient(b, redactor)),
        (client) => ({
          config: b,
          client: counted(client, instruments)
        })
      )
    )
    const states = yield* makeBackendStates(backends)

    const poll = (backend: Backend) =>
      backend.client.supported(options.requestTimeout).pipe(
        Effect.flatMap((raw) => states.polled(backend.config.id, raw)),
        Effect.catchAll(states.pollFailed)
      )
    const refresh = Effect.forEach(backends, poll, { concurrency: "unbounded", discard: true }).pipe(
      Effect.withSpan("FacilitatorPool.refresh")
    )

    const pollSeconds = Duration.toSeconds(options.pollInterval)
    const eligible = (network: string, scheme: string) =>
      Effect.map(states.view, (view) => eligibleIn(backends, view, network, scheme, pollSeconds))

    /**
     * The healthy backends for a kind; 503 when none advertises it yet but some backend has not
     * answered, 422 when none advertises it, 502 when none of those is healthy.
     */
    const checkKind = (network: string, scheme: string): Effect.Effect<ReadonlyArray<Backend>, KindRefusal> =>
      Effect.flatMap(
        eligible(network, scheme),
        ({ advertised, healthy, unknown }): Effect.Effect<ReadonlyArray<Backend>, KindRefusal> =>
          !advertised
            ? Effect.fail(unknown ?? unsupported(network, scheme))
            : healthy.length === 0
              ? Effect.fail(noneHealthy(network, scheme))
              : Effect.succeed(healthy)
      )

    const verify = Effect.fn("FacilitatorPool.verify")(function* (body: {
      readonly paymentRequirements: { readonly network: string; readonly scheme: string }
    }) {
      const healthy = yield* checkKind(body.paymentRequirements.network, body.paymentRequirements.scheme)
      const failures: Array<BackendFailure> = []
      // Verify changes nothing, so any failure may fall through to the next backend.
      for (const backend of healthy) {
        const result = yield* Effect.either(backend.client.verify(body, options.requestTimeout))
        if (result._tag === "Right") return yield* Effect.as(states.callSucceeded(backend.config.id), result.right)
        failures.push(result.left)
        yield* states.callFailed(result.left)
      }
      return yield* Effect.fail(
        new AllFacilitatorsFailed({ message: `every eligible facilitator failed: ${listFailures(failures)}` })
      )
    })

    const settleTargets = (network: string, scheme: string) =>
      Effect.map(eligible(network, scheme), ({ advertised, healthy, unknown }) =>
        advertised
          ? Either.right(healthy.map((b) => b.config.id))
          : Either.left(unknown ?? unsupported(network, scheme))
      )

    // Never another backend than the named one, which would submit the payload a second time.
    const settleVia = Effect.fn("FacilitatorPool.settleVia")(function* (
      backendId: string,
      body: unknown,
      timeout: Duration.DurationInput
    ) {
      const backend = backends.find((b) => b.config.id === backendId)
      if (backend === undefined) {
        return Either.left(
          new BackendFailure({ backendId, kind: "Unreachable", status: null, detail: "no longer configured" })
        )
      }
      const bound = Duration.min(Duration.decode(timeout), Duration.decode(options.settleTimeout))
      const result = yield* Effect.either(backend.client.settle(body, bound))
      yield* result._tag === "Right" ? states.callSucceeded(backendId) : states.callFailed(result.left)
      return result
    })

    const status = Effect.flatMap(states.view, ({ of }) =>
      Effect.forEach(backends, (b) =>
        Effect.map(b.client.embedded ?? Effect.succeed(undefined), (embedded) => statusOf(b, of(b), embedded))
      )
    )

    const supported: Effect.Effect<SupportedResponse, FacilitatorsNotReady> = Effect.flatMap(
      states.view,
      ({ of, progress }) =>
        progress.length > 0 && !progress.some((b) => b.answered)
          ? Effect.fail(notReady(progress, "the supported kinds", pollSeconds))
          : Effect.succeed(mergeSupported(backends.flatMap((b) => (of(b).healthy ? [of(b).capabilities] : []))))
    )

    // First poll at once, then on the schedule, for as long as the layer lives.
    yield* refresh.pipe(Effect.repeat(Schedule.spaced(options.pollInterval)), Effect.forkScoped)

    return {
      supported,
      readiness: Effect.map(states.view, ({ progress }) => poolReadiness(progress)),
      status,
      health: Effect.map(status, (backends) => ({
        configured: backends.length,
        healthy: backends.filter((b) => b.healthy).length,
        backends
      })),
      refresh,
      checkKind: (network: string, scheme: string) =>
        Effect.asVoid(checkKind(network, scheme)).pipe(Effect.withSpan("FacilitatorPool.checkKind")),
      verify,
      settleTargets,
      settleVia
    } satisfies FacilitatorPoolShape
  })
