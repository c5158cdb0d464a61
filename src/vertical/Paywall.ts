import type { KeyObject } from "node:crypto"
import { encodePaymentRequiredHeader } from "@x402/core/http"
import type { ResourceConfig } from "@x402/core/server"
import type { PaymentPayload, PaymentRequirements, ResourceInfo } from "@x402/core/types"
import { declareOfferReceiptExtension } from "@x402/extensions/offer-receipt"
import { Context, Duration, Effect, Layer, Ref, Schedule, type Scope } from "effect"
import type { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { ed25519Issuer, newProviderKey } from "../extensions/offerReceipt.js"
import type {
  FacilitatorUnavailable,
  MalformedPaidRequest,
  PaymentRequired,
  SettlementFailed,
  SettlementUnconfirmed
} from "./errors.js"
import {
  configOnlyFacilitator,
  displayUrl,
  errorMessage,
  facilitatorClientOf,
  makeServer,
  prefetchedSupported,
  X402_VERSION
} from "./paywallFacilitator.js"
import { settleWith } from "./paywallSettle.js"
import { verifyWith } from "./paywallVerify.js"

export type Endpoint = "inspect" | "changes" | "compliance" | "eligibility"

/** One payment option a challenge offers; `amount` is in base units, for `upto` the ceiling the buyer authorises. */
export interface Offer {
  readonly scheme: PaymentScheme
  readonly amount: string
}

export type Offers = Readonly<Record<Endpoint, ReadonlyArray<Offer>>>

/** A fixed `exact` price per endpoint, as the reference vertical sells. */
export const exactOffers = (prices: Readonly<Record<Endpoint, string>>): Offers => ({
  inspect: [{ scheme: "exact", amount: prices.inspect }],
  changes: [{ scheme: "exact", amount: prices.changes }],
  compliance: [{ scheme: "exact", amount: prices.compliance }],
  eligibility: [{ scheme: "exact", amount: prices.eligibility }]
})

export interface PaywallConfig {
  readonly network: StellarNetwork
  /** SEP-41 contract of the asset buyers pay in (USDC). */
  readonly asset: string
  readonly payTo: string
  /** What each endpoint asks now: read for every challenge and every verify, so a seller may change its prices. */
  readonly offers: Effect.Effect<Offers>
  readonly facilitatorUrl: string
  readonly facilitatorApiKey: string | null
  readonly timeoutMs: number
  /**
   * The provider's Ed25519 key for offers and receipts (`offer-receipt`): the vertical and each
   * demo provider pass their own from its key file (`offerKey.ts`); without one, a key made when the
   * paywall starts.
   */
  readonly signingKey?: KeyObject
}

export interface PaymentsStatus {
  readonly ready: boolean
  /** Why payments are not available yet, or which facilitator they go through. */
  readonly detail: string
}

/** A payment the facilitator verified against the requirement it matched. */
export interface VerifiedPayment {
  readonly payload: PaymentPayload
  readonly requirements: PaymentRequirements
}

export interface PaywallShape {
  readonly status: Effect.Effect<PaymentsStatus>
  /** What each endpoint asks now. */
  readonly offers: Effect.Effect<Offers>
  /** The PAYMENT-REQUIRED header value for an endpoint; available whether or not the facilitator is. */
  readonly challenge: (endpoint: Endpoint, resource: ResourceInfo, error?: string) => Effect.Effect<string>
  readonly verify: (
    endpoint: Endpoint,
    paymentSignature: string
  ) => Effect.Effect<VerifiedPayment, MalformedPaidRequest | PaymentRequired | FacilitatorUnavailable>
  /** Settles and returns the PAYMENT-RESPONSE header value. */
  readonly settle: (payment: VerifiedPayment) => Effect.Effect<string, SettlementFailed | SettlementUnconfirmed>
}

export class Paywall extends Context.Tag("sextant/vertical/Paywall")<Paywall, PaywallShape>() {
  static readonly Live = (config: PaywallConfig) => Layer.scoped(Paywall, makePaywall(config))
}

const MAX_TIMEOUT_SECONDS = 300
const SUPPORTED_TIMEOUT = Duration.seconds(10)
/** Offers are signed with the provider's key (`offer-receipt`). */
const SIGNED_OFFERS = declareOfferReceiptExtension()
/** Background retries toward a facilitator that is down: 0.5 s doubling, never more than 30 s apart. */
const INIT_RETRY = Schedule.exponential("500 millis").pipe(Schedule.either(Schedule.spaced("30 seconds")))

export const makePaywall = (config: PaywallConfig): Effect.Effect<PaywallShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const facilitatorName = displayUrl(config.facilitatorUrl)
    const issuer = ed25519Issuer(config.signingKey ?? newProviderKey())
    const client = facilitatorClientOf(config)
    const supported = prefetchedSupported(client)
    const live = makeServer(supported.client, config.network, issuer)
    const fromConfig = makeServer(configOnlyFacilitator(config.network), config.network, issuer)
    yield* Effect.promise(() => fromConfig.initialize())

    const status = yield* Ref.make<PaymentsStatus>({
      ready: false,
      detail: `waiting for the facilitator at ${facilitatorName}`
    })

    const resourceConfig = (offer: Offer): ResourceConfig => ({
      scheme: offer.scheme,
      network: config.network,
      payTo: config.payTo,
      price: { asset: config.asset, amount: offer.amount },
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS
    })

    /**
     * The requirements an endpoint asks now, one per offer. Each is built by the live facilitator's
     * server when it supports that scheme (its `extra` is what the facilitator announced), else from
     * the config, so a challenge never depends on the facilitator being up or knowing `upto`.
     */
    const requirementsFor = (endpoint: Endpoint) =>
      Effect.gen(function* () {
        const { ready } = yield* Ref.get(status)
        const offers = (yield* config.offers)[endpoint]
        const built = yield* Effect.forEach(offers, (offer) => {
          const server =
            ready && live.getSupportedKind(X402_VERSION, config.network, offer.scheme) !== undefined ? live : fromConfig
          return Effect.promise(() => server.buildPaymentRequirements(resourceConfig(offer)))
        })
        return built.flat()
      })

    const initializeOnce = Effect.tryPromise({ try: supported.fetchSupported, catch: errorMessage }).pipe(
      Effect.timeoutFail({ duration: SUPPORTED_TIMEOUT, onTimeout: () => "GET /supported did not answer" }),
      Effect.zipRight(Effect.tryPromise({ try: () => live.initialize(), catch: errorMessage })),
      Effect.filterOrFail(
        () => live.getSupportedKind(X402_VERSION, config.network, "exact") !== undefined,
        () => `it lists no exact kind for ${config.network}`
      ),
      Effect.tapError((reason) =>
        Ref.set(status, { ready: false, detail: `the facilitator at ${facilitatorName} is not ready (${reason})` })
      )
    )

    yield* initializeOnce.pipe(
      Effect.retry(INIT_RETRY),
      Effect.zipRight(Ref.set(status, { ready: true, detail: `payments go through ${facilitatorName}` })),
      Effect.zipRight(Effect.logInfo(`vertical: facilitator ${facilitatorName} ready for exact on ${config.network}`)),
      Effect.forkScoped
    )

    const challenge = (endpoint: Endpoint, resource: ResourceInfo, error?: string) =>
      Effect.gen(function* () {
        const requirements = yield* requirementsFor(endpoint)
        const paymentRequired = yield* Effect.promise(() =>
          fromConfig.createPaymentRequiredResponse(requirements, resource, error, SIGNED_OFFERS)
        )
        return encodePaymentRequiredHeader(paymentRequired)
      })

    const verify = verifyWith({ live, status, requirementsFor, facilitatorName, timeoutMs: config.timeoutMs })
    const settle = settleWith(live, config.timeoutMs)
    return { status: Ref.get(status), offers: config.offers, challenge, verify, settle }
  })
