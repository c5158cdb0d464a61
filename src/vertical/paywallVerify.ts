import { decodePaymentSignatureHeader } from "@x402/core/http"
import type { x402ResourceServer } from "@x402/core/server"
import { type PaymentPayload, type PaymentRequirements, VerifyError } from "@x402/core/types"
import { Duration, Effect, Either, Ref, Schema } from "effect"
import { FacilitatorUnavailable, MalformedPaidRequest, PaymentRequired } from "./errors.js"
import type { Endpoint, PaymentsStatus } from "./Paywall.js"
import { errorMessage, X402_VERSION } from "./paywallFacilitator.js"

/** What the vertical accepts in PAYMENT-SIGNATURE: an x402 v2 payload naming the requirement it pays. */
const PaymentSignature = Schema.Struct({
  x402Version: Schema.Literal(X402_VERSION),
  accepted: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  payload: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const decodePayment = (header: string): Either.Either<PaymentPayload, MalformedPaidRequest> => {
  const invalid = (detail: string) =>
    new MalformedPaidRequest({
      error: "INVALID_PAYMENT",
      message: `PAYMENT-SIGNATURE is not a usable x402 payment: ${detail}`
    })
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

/** What the verify step reads of the paywall: its live server, its readiness and the requirements an endpoint asks now. */
export interface VerifyParts {
  readonly live: x402ResourceServer
  readonly status: Ref.Ref<PaymentsStatus>
  readonly requirementsFor: (endpoint: Endpoint) => Effect.Effect<Array<PaymentRequirements>>
  readonly facilitatorName: string
  readonly timeoutMs: number
}

/**
 * The paywall's verify: the PAYMENT-SIGNATURE decoded, matched to one of the endpoint's current
 * requirements and verified by the facilitator, within the configured timeout.
 */
export const verifyWith =
  ({ live, status, requirementsFor, facilitatorName, timeoutMs }: VerifyParts) =>
  (endpoint: Endpoint, paymentSignature: string) =>
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
      const result = yield* Effect.tryPromise({
        try: () => live.verifyPayment(payload, matching),
        catch: (e) => e
      }).pipe(
        Effect.timeoutFail({
          duration: Duration.millis(timeoutMs),
          onTimeout: () => new Error(`verify did not answer within ${timeoutMs} ms`)
        }),
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
