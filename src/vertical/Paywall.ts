import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http"
import { type FacilitatorClient, HTTPFacilitatorClient, type ResourceConfig, x402ResourceServer } from "@x402/core/server"
import {
  type PaymentPayload,
  type PaymentRequirements,
  type ResourceInfo,
  SettleError,
  type SupportedResponse,
  type SettleResponse,
  VerifyError
} from "@x402/core/types"
import { Context, Duration, Effect, Either, Layer, Ref, Schedule, Schema, type Scope } from "effect"
import type { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { stellarServerScheme } from "../x402/stellarServerScheme.js"
import { ed25519Issuer, newProviderKey } from "../extensions/offerReceipt.js"
import { createOfferReceiptExtension, declareOfferReceiptExtension, type OfferReceiptIssuer } from "@x402/extensions/offer-receipt"
import type { KeyObject } from "node:crypto"
import { FacilitatorUnavailable, MalformedPaidRequest, PaymentRequired, SettlementFailed, SettlementUnconfirmed } from "./errors.js"

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

const X402_VERSION = 2
const MAX_TIMEOUT_SECONDS = 300
const SUPPORTED_TIMEOUT = Duration.seconds(10)
/** Background retries toward a facilitator that is down: 0.5 s doubling, never more than 30 s apart. */
const INIT_RETRY = Schedule.exponential("500 millis").pipe(Schedule.either(Schedule.spaced("30 seconds")))

/** What the vertical accepts in PAYMENT-SIGNATURE: an x402 v2 payload naming the requirement it pays. */
const PaymentSignature = Schema.Struct({
  x402Version: Schema.Literal(X402_VERSION),
  accepted: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  payload: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const decodePayment = (header: string): Either.Either<PaymentPayload, MalformedPaidRequest> => {
  const invalid = (detail: string) =>
    new MalformedPaidRequest({ error: "INVALID_PAYMENT", message: `PAYMENT-SIGNATURE is not a usable x402 payment: ${detail}` })
  let decoded: unknown
  try {
    decoded = decodePaymentSignatureHeader(header)
  } catch {
    return Either.left(invalid("expected base64 of a JSON payment payload"))
  }
  return Schema.decodeUnknownEither(PaymentSignature)(decoded).pipe(
    Either.mapBoth({
      onLeft: () => invalid("expected {x402Version: 2, accepted, payload}"),
      onRight: () => decoded as PaymentPayload
    })
  )
}

/** The facilitator URL without any credentials it may carry, for messages and logs. */
const displayUrl = (url: string): string => {
  try {
    const u = new URL(url)
    return `${u.origin}${u.pathname}`
  } catch {
    return "the configured facilitator"
  }
}

/**
 * Reasons that say the payment's outcome is not known yet: the x402 `unexpected_settle_error` (what
 * Sextant answers for an indeterminate or in-flight settlement) and 2.27's `settlement_pending`
 * (broadcast, not confirmed; the stock server retries once before it reaches here).
 */
const UNKNOWN_OUTCOME_REASONS = new Set(["unexpected_settle_error", "settlement_pending"])
const outcomeUnknown = (reason: string | undefined) => reason !== undefined && UNKNOWN_OUTCOME_REASONS.has(reason)

const errorMessage = (e: unknown): string => {
  const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : ""
  return e instanceof Error ? `${e.message}${cause}` : String(e)
}

/**
 * A facilitator client that knows only what the config says the vertical asks for. It lets the
 * x402 library build challenges (amount, asset, payTo, encoding) before the real facilitator has
 * answered `/supported`; it never verifies or settles, since a paid request waits for readiness.
 */
const configOnlyFacilitator = (network: StellarNetwork): FacilitatorClient => {
  const refuse = () => Promise.reject(new Error("the facilitator is not ready"))
  return {
    getSupported: () =>
      Promise.resolve({
        kinds: SCHEMES.map((scheme) => ({ x402Version: X402_VERSION, scheme, network })),
        extensions: [],
        signers: {}
      }),
    verify: refuse,
    settle: refuse
  }
}

const SCHEMES: ReadonlyArray<PaymentScheme> = ["exact", "upto"]

/**
 * The facilitator's client for the live server, whose `/supported` is fetched by `fetchSupported`
 * only. `x402ResourceServer.initialize` prints a facilitator it cannot reach to the console,
 * outside the logger; here it only reads the answer `fetchSupported` got, so a facilitator that
 * is down (Sextant's own, before it listens) is retried quietly.
 */
const prefetchedSupported = (client: FacilitatorClient) => {
  // Written only after a successful fetch, and read only by the initialize that follows it.
  let answer: SupportedResponse | undefined
  const fetchSupported = () =>
    client.getSupported().then((supported) => {
      answer = supported
    })
  const forServer: FacilitatorClient = {
    getSupported: () => (answer === undefined ? Promise.reject(new Error("GET /supported has not answered")) : Promise.resolve(answer)),
    verify: (payload, requirements) => client.verify(payload, requirements),
    settle: (payload, requirements) => client.settle(payload, requirements)
  }
  return { fetchSupported, client: forServer }
}

/**
 * The `offer-receipt` extension signs each challenge's offers and each settled payment's receipt
 * with the provider's key (upstream's own extension; `extensions/offerReceipt.ts`).
 */
const makeServer = (client: FacilitatorClient, network: StellarNetwork, issuer: OfferReceiptIssuer) =>
  new x402ResourceServer(client)
    .register(network, stellarServerScheme("exact"))
    .register(network, stellarServerScheme("upto"))
    .registerExtension(createOfferReceiptExtension(issuer))

/** Receipts name the transaction, so a buyer's receipt can be checked against the ledger. */
const SIGNED_OFFERS = declareOfferReceiptExtension()
const SIGNED_RECEIPTS = declareOfferReceiptExtension({ includeTxHash: true })

/** What upstream's receipt hook reads of the request: the paid resource's URL. */
const receiptContext = (payload: PaymentPayload) => ({ request: { adapter: { getUrl: () => payload.resource?.url } } })

export const makePaywall = (config: PaywallConfig): Effect.Effect<PaywallShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const facilitatorName = displayUrl(config.facilitatorUrl)
    const apiKey = config.facilitatorApiKey
    const client = new HTTPFacilitatorClient({
      url: config.facilitatorUrl,
      ...(apiKey === null
        ? {}
        : {
            createAuthHeaders: () => {
              const headers = { Authorization: `Bearer ${apiKey}` }
              return Promise.resolve({ verify: headers, settle: headers, supported: headers })
            }
          })
    })
    const issuer = ed25519Issuer(config.signingKey ?? newProviderKey())
    const supported = prefetchedSupported(client)
    const live = makeServer(supported.client, config.network, issuer)
    const fromConfig = makeServer(configOnlyFacilitator(config.network), config.network, issuer)
    yield* Effect.promise(() => fromConfig.initialize())

    const status = yield* Ref.make<PaymentsStatus>({ ready: false, detail: `waiting for the facilitator at ${facilitatorName}` })
    const timeout = Duration.millis(config.timeoutMs)

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
          const server = ready && live.getSupportedKind(X402_VERSION, config.network, offer.scheme) !== undefined ? live : fromConfig
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

    const verify = (endpoint: Endpoint, paymentSignature: string) =>
      Effect.gen(function* () {
        const payload = yield* decodePayment(paymentSignature)
        const current = yield* Ref.get(status)
        if (!current.ready) {
          return yield* new FacilitatorUnavailable({
            message: `payments are unavailable: ${current.detail}; nothing was charged, retry later`
          })
        }
        const requirements = yield* requirementsFor(endpoint)
        const matching = live.findMatchingRequirements(requirements, payload)
        if (!matching) {
          return yield* new PaymentRequired({
            reason: "no_matching_requirements",
            message: "the payment does not match this endpoint's current price, asset, network or payee"
          })
        }
        const result = yield* Effect.tryPromise({ try: () => live.verifyPayment(payload, matching), catch: (e) => e }).pipe(
          Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error(`verify did not answer within ${config.timeoutMs} ms`) }),
          Effect.mapError((e) =>
            e instanceof VerifyError
              ? new PaymentRequired({
                  reason: e.invalidReason,
                  message: `the facilitator rejected the payment: ${e.invalidMessage ?? e.invalidReason ?? "invalid"}`
                })
              : new FacilitatorUnavailable({
                  message: `the facilitator at ${facilitatorName} could not verify the payment (${errorMessage(e)}); nothing was charged`
                })
          )
        )
        if (!result.isValid) {
          return yield* new PaymentRequired({
            reason: result.invalidReason,
            message: `the facilitator rejected the payment: ${result.invalidMessage ?? result.invalidReason ?? "invalid"}`
          })
        }
        return { payload, requirements: matching }
      })

    const unconfirmed = (detail: string) =>
      new SettlementUnconfirmed({ message: `the facilitator did not confirm settlement (${detail}); no data was returned` })

    const refused = (answer: SettleResponse) =>
      new SettlementFailed({
        message: `settlement failed: ${answer.errorMessage ?? answer.errorReason ?? "refused"}`,
        paymentResponse: encodePaymentResponseHeader(answer)
      })

    /**
     * A facilitator that said no (a SettleError, or `success: false`) is a refusal: nothing moved, and
     * the buyer gets 402 with the reason. An outcome nobody knows (no answer in time, a 5xx, an answer
     * that names no usable body, or a reason saying the outcome is not known) is unconfirmed: the
     * buyer must not read it as unpaid.
     */
    const settle = ({ payload, requirements }: VerifiedPayment) =>
      Effect.tryPromise({
        try: () => live.settlePayment(payload, requirements, SIGNED_RECEIPTS, receiptContext(payload)),
        catch: (e) => e
      }).pipe(
        Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error(`settle did not answer within ${config.timeoutMs} ms`) }),
        Effect.mapError((e) =>
          e instanceof SettleError && e.statusCode < 500 && !outcomeUnknown(e.errorReason)
            ? refused({ success: false, errorReason: e.errorReason, errorMessage: e.errorMessage, payer: e.payer, transaction: e.transaction, network: e.network })
            : unconfirmed(e instanceof SettleError ? `${e.statusCode} ${e.errorReason ?? "no reason"}: ${e.errorMessage ?? ""}` : errorMessage(e))
        ),
        Effect.flatMap((result) =>
          result.success
            ? Effect.succeed(encodePaymentResponseHeader(result))
            : Effect.fail(outcomeUnknown(result.errorReason) ? unconfirmed(`${result.errorReason}`) : refused(result))
        )
      )

    return { status: Ref.get(status), offers: config.offers, challenge, verify, settle }
  })
