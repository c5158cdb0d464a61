import { Data } from "effect"

/**
 * Everything that stops a paid request, with the HTTP status it becomes. Only a completed
 * settlement releases data; every error here is raised before settle, or is the settle failing.
 */

/** 400: malformed JSON, a body that fails its schema, or an unreadable PAYMENT-SIGNATURE. */
export class MalformedPaidRequest extends Data.TaggedError("MalformedPaidRequest")<{
  readonly error: "INVALID_JSON" | "INVALID_BODY" | "INVALID_PAYMENT"
  readonly message: string
}> {}

/** 413: the body is larger than any valid request. */
export class BodyTooLarge extends Data.TaggedError("BodyTooLarge")<{ readonly message: string }> {}

/** 404: the asset's issuer account or token contract does not exist on this network. */
export class AssetNotFound extends Data.TaggedError("AssetNotFound")<{ readonly message: string }> {}

/** 422: a real asset this service does not describe (the native XLM contract). */
export class AssetNotDescribed extends Data.TaggedError("AssetNotDescribed")<{ readonly message: string }> {}

/** 502: Horizon or Soroban RPC failed, timed out or answered an unexpected shape. */
export class UpstreamFailure extends Data.TaggedError("UpstreamFailure")<{
  readonly source: "horizon" | "soroban-rpc"
  readonly message: string
}> {}

/** 402: the payment was missing, did not match the current requirements, or failed verification. */
export class PaymentRequired extends Data.TaggedError("PaymentRequired")<{
  readonly reason: string | undefined
  readonly message: string
}> {}

/** 503: the facilitator is not ready (unreachable, or lists no Stellar exact kind) or failed to answer verify. */
export class FacilitatorUnavailable extends Data.TaggedError("FacilitatorUnavailable")<{ readonly message: string }> {}

/** 402: the facilitator answered that settlement failed; `paymentResponse` is the PAYMENT-RESPONSE header. */
export class SettlementFailed extends Data.TaggedError("SettlementFailed")<{
  readonly message: string
  readonly paymentResponse: string
}> {}

/** 502: settle did not come back with an answer; whether money moved is unknown, so no data is released. */
export class SettlementUnconfirmed extends Data.TaggedError("SettlementUnconfirmed")<{ readonly message: string }> {}

export type VerticalError =
  | MalformedPaidRequest
  | BodyTooLarge
  | AssetNotFound
  | AssetNotDescribed
  | UpstreamFailure
  | PaymentRequired
  | FacilitatorUnavailable
  | SettlementFailed
  | SettlementUnconfirmed
