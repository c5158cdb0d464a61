import { Data } from "effect"

/**
 * Requirements this wallet will not sign for: another scheme, network or asset than the deployment
 * pays in, an amount that is not positive base units, or fees the facilitator does not sponsor.
 */
export class UnpayableRequirements extends Data.TaggedError("UnpayableRequirements")<{ readonly reason: string }> {}

/** Soroban RPC could not be asked (unreachable, HTTP error, timeout, malformed answer). */
export class SorobanRpcFailure extends Data.TaggedError("SorobanRpcFailure")<{ readonly reason: string }> {}

/**
 * Soroban RPC answered, but not with something to sign: the simulation failed, needs a restore,
 * or asks for an authorisation other than the payer's for exactly this transfer.
 */
export class SimulationRejected extends Data.TaggedError("SimulationRejected")<{ readonly reason: string }> {}

export type BuildPaymentError = UnpayableRequirements | SorobanRpcFailure | SimulationRejected

/** The resource did not answer 402 to the unpaid request (nor an MCP tool a PaymentRequired), so there was nothing to pay. */
export class NoPaymentRequired extends Data.TaggedError("NoPaymentRequired")<{
  readonly httpStatus: number
  /** What an MCP tool answered instead; absent for HTTP, whose status says it. */
  readonly toolAnswer?: string
}> {}

/** A 402 whose challenge is missing or does not decode. */
export class ChallengeUnreadable extends Data.TaggedError("ChallengeUnreadable")<{ readonly reason: string }> {}

/** No option of the challenge is one this wallet pays (scheme, network, asset, version, the caller's choice). */
export class NoAcceptableOption extends Data.TaggedError("NoAcceptableOption")<{ readonly offered: string }> {}

/** Acceptable options exist, but even the cheapest asks more than the caller's limit. Nothing was sent. */
export class PriceAboveLimit extends Data.TaggedError("PriceAboveLimit")<{
  /** Base units. */
  readonly cheapest: string
  readonly maxPrice: string
}> {}

/**
 * The signed payment was sent but no answer came back (connection lost, timeout): the facilitator
 * may have settled it. The authorisation identifies it on the ledger until it expires.
 */
export class PaymentOutcomeUnknown extends Data.TaggedError("PaymentOutcomeUnknown")<{
  readonly reason: string
  readonly authorization: Authorization
  /** The payment identifier every send of it carried (the seller offered the extension). */
  readonly paymentIdentifier?: string
}> {}

/** The Soroban address-credential authorisation a payment carries: how the ledger recognises it. */
export interface Authorization {
  /** The payer (G...). */
  readonly payer: string
  /** The credential's nonce (int64, decimal). */
  readonly nonce: string
  /** Last ledger at which the signature is valid. */
  readonly expirationLedger: number
}
