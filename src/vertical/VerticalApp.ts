import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Schema } from "effect"
import { describeParseError } from "../domain/issues.js"
import { logFailure } from "../lifecycle/interruption.js"
import { AssetBody, EligibilityBody } from "./assetRef.js"
import { BodyTooLarge, MalformedPaidRequest, PaymentRequired, type VerticalError } from "./errors.js"
import { mcpEndpoint, mcpPath } from "./mcpTools.js"
import { type Endpoint, type Offer, Paywall } from "./Paywall.js"
import * as Queries from "./queries.js"
import type { StellarData } from "./StellarData.js"

export interface VerticalAppSettings {
  /** The `<vertical>` path segment. */
  readonly name: string
  /** Origin buyers reach this app at; challenges name `<origin>/<name>/v1/rwa/<endpoint>`. */
  readonly origin: string
  readonly intel: Queries.IntelSettings
}

export const ENDPOINTS: ReadonlyArray<Endpoint> = ["inspect", "changes", "compliance", "eligibility"]

export const DESCRIPTIONS: Readonly<Record<Endpoint, string>> = {
  inspect: "Asset identity, issuer signals, metadata and technical state of a Stellar asset or token contract.",
  changes:
    "Recent observable changes of a Stellar asset: issuer flag changes, large mints and burns, trustline authorisation changes, contract upgrades.",
  compliance:
    "Observable technical restrictions of a Stellar asset (authorisation required, clawback, freeze capability, contract admin); no legal conclusions.",
  eligibility: "Technical signals of whether a wallet can hold and receive a Stellar asset now."
}

/** No valid body comes near this; a larger one is refused unread. */
const MAX_BODY_BYTES = 16 * 1024

export const endpointPath = (name: string, endpoint: Endpoint): `/${string}` => `/${name}/v1/rwa/${endpoint}`

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson(body, { status, headers })

const decodeOptions = { errors: "all", onExcessProperty: "error" } as const

/** The request's body as JSON, at most MAX_BODY_BYTES. */
const readJson = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const tooLarge = new BodyTooLarge({ message: `the body is larger than ${MAX_BODY_BYTES} bytes` })
  if (Number(request.headers["content-length"] ?? 0) > MAX_BODY_BYTES) return yield* tooLarge
  const text = yield* request.text.pipe(
    Effect.mapError(() => new MalformedPaidRequest({ error: "INVALID_JSON", message: "the body could not be read" }))
  )
  if (text.length > MAX_BODY_BYTES) return yield* tooLarge
  return yield* Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: () =>
      new MalformedPaidRequest({
        error: "INVALID_JSON",
        message: 'the body must be JSON, e.g. {"asset": "CODE:ISSUER"}'
      })
  })
})

const decodeInput = <A, I>(schema: Schema.Schema<A, I>, input: unknown) =>
  Schema.decodeUnknown(schema)(input, decodeOptions).pipe(
    Effect.mapError((e) => new MalformedPaidRequest({ error: "INVALID_BODY", message: describeParseError(e) }))
  )

const describeOffer = (offer: Offer) => (offer.scheme === "exact" ? offer.amount : `up to ${offer.amount}`)

/** The endpoint's input, checked now (an HTTP body, an MCP tool's arguments); the returned effect fetches the answer when run. */
export const queryFor = (
  endpoint: Endpoint,
  input: unknown,
  settings: Queries.IntelSettings
): Effect.Effect<Effect.Effect<unknown, Queries.QueryError, StellarData>, MalformedPaidRequest> => {
  switch (endpoint) {
    case "inspect":
      return Effect.map(decodeInput(AssetBody, input), (body) => Queries.inspect(body.asset, settings))
    case "changes":
      return Effect.map(decodeInput(AssetBody, input), (body) => Queries.changes(body.asset, settings))
    case "compliance":
      return Effect.map(decodeInput(AssetBody, input), (body) => Queries.compliance(body.asset, settings))
    case "eligibility":
      return Effect.map(decodeInput(EligibilityBody, input), (body) =>
        Queries.eligibility(body.asset, body.wallet, settings)
      )
  }
}

/**
 * One paid endpoint. Without PAYMENT-SIGNATURE the answer is the 402 challenge, whatever the
 * body, so probes and buyers can always read the price. With it, the order is what keeps a
 * buyer from paying for nothing: body checked (400), payment verified (402/503), data fetched
 * (404/422/502), and only then settled; the data leaves only with a PAYMENT-RESPONSE.
 */
const paidEndpoint = (endpoint: Endpoint, settings: VerticalAppSettings) => {
  const resource = {
    url: `${settings.origin}${endpointPath(settings.name, endpoint)}`,
    description: DESCRIPTIONS[endpoint],
    mimeType: "application/json"
  }
  const handle = Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const paywall = yield* Paywall
    const signature = request.headers["payment-signature"]
    if (signature === undefined) {
      const offers = (yield* paywall.offers)[endpoint]
      return yield* new PaymentRequired({
        reason: undefined,
        message: `this endpoint costs ${offers.map(describeOffer).join(" or ")} base units; pay as the PAYMENT-REQUIRED header describes and retry with PAYMENT-SIGNATURE`
      })
    }
    const query = yield* Effect.flatMap(readJson, (input) => queryFor(endpoint, input, settings.intel))
    const payment = yield* paywall.verify(endpoint, signature)
    // Rendered before settling, so nothing that can fail stands between the charge and the answer.
    const rendered = JSON.stringify(yield* query)
    const paymentResponse = yield* paywall.settle(payment)
    return HttpServerResponse.text(rendered, {
      status: 200,
      contentType: "application/json",
      headers: { "PAYMENT-RESPONSE": paymentResponse }
    })
  })
  return handle.pipe(Effect.catchAll((e: VerticalError) => errorResponse(endpoint, resource, e)))
}

/** An answer of every failure but a payment asked: its status, code, message and headers. */
export const errorAnswer = (e: Exclude<VerticalError, PaymentRequired>) => {
  const answer = (status: number, error: string, message: string, headers: Record<string, string> = {}) => ({
    status,
    error,
    message,
    headers
  })
  switch (e._tag) {
    case "MalformedPaidRequest":
      return answer(400, e.error, e.message)
    case "BodyTooLarge":
      return answer(413, "BODY_TOO_LARGE", e.message)
    case "AssetNotFound":
      return answer(404, "ASSET_NOT_FOUND", `${e.message}; nothing was charged`)
    case "AssetNotDescribed":
      return answer(422, "UNSUPPORTED_ASSET", `${e.message}; nothing was charged`)
    case "UpstreamFailure":
      return answer(502, "UPSTREAM_UNAVAILABLE", `${e.message}; nothing was charged`)
    case "FacilitatorUnavailable":
      return answer(503, "PAYMENTS_UNAVAILABLE", e.message, { "Retry-After": "5" })
    case "SettlementFailed":
      return answer(402, "SETTLEMENT_FAILED", e.message, { "PAYMENT-RESPONSE": e.paymentResponse })
    case "SettlementUnconfirmed":
      return answer(502, "SETTLEMENT_UNCONFIRMED", e.message)
  }
}

const errorResponse = (
  endpoint: Endpoint,
  resource: { url: string; description: string; mimeType: string },
  e: VerticalError
) =>
  Effect.gen(function* () {
    if (e._tag === "PaymentRequired") {
      const paywall = yield* Paywall
      const challenge = yield* paywall.challenge(endpoint, resource, e.reason ?? "Payment required")
      return json(402, { error: "PAYMENT_REQUIRED", message: e.message }, { "PAYMENT-REQUIRED": challenge })
    }
    const answer = errorAnswer(e)
    return json(answer.status, { error: answer.error, message: answer.message }, answer.headers)
  })

/** `amount` is the first offer's (the only one for the reference vertical); `offers` lists every option asked now. */
const status = (settings: VerticalAppSettings) =>
  Effect.gen(function* () {
    const paywall = yield* Paywall
    const payments = yield* paywall.status
    const offers = yield* paywall.offers
    return json(200, {
      status: "ok",
      name: settings.name,
      network: settings.intel.network,
      payments,
      endpoints: ENDPOINTS.map((endpoint) => ({
        method: "POST",
        url: `${settings.origin}${endpointPath(settings.name, endpoint)}`,
        capability: `rwa.${endpoint}`,
        amount: offers[endpoint][0]?.amount ?? null,
        offers: offers[endpoint]
      }))
    })
  })

/** The vertical's app as a server runs it: it needs the request, the paywall and the ledger reads. */
export type VerticalHttpApp = Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  never,
  HttpServerRequest.HttpServerRequest | Paywall | StellarData
>

export const verticalApp = (settings: VerticalAppSettings): VerticalHttpApp =>
  HttpRouter.fromIterable([
    HttpRouter.makeRoute("GET", `/${settings.name}/v1/status`, status(settings)),
    ...ENDPOINTS.map((endpoint) =>
      HttpRouter.makeRoute("POST", endpointPath(settings.name, endpoint), paidEndpoint(endpoint, settings))
    ),
    HttpRouter.makeRoute(
      "*",
      mcpPath(settings.name),
      mcpEndpoint({ ...settings, endpoints: ENDPOINTS, descriptions: DESCRIPTIONS, queryFor, errorAnswer })
    )
  ]).pipe(
    Effect.catchTag("RouteNotFound", (e) =>
      Effect.succeed(json(404, { error: "NOT_FOUND", message: `no route ${e.request.method} ${e.request.url}` }))
    ),
    Effect.catchAllCause((cause) =>
      logFailure("vertical: unexpected failure")(cause).pipe(
        Effect.as(
          Cause.isInterruptedOnly(cause)
            ? json(503, { error: "SHUTTING_DOWN", message: "the vertical is stopping; nothing was charged" })
            : json(500, { error: "INTERNAL", message: "an unexpected error occurred; nothing was charged" })
        )
      )
    )
  )
