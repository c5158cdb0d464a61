import { Data } from "effect"
import type { BuyAttempt } from "../domain/buy.js"
import type { SpendLedgerUnavailable } from "./SpendLedger.js"

type Attempts = { readonly attempts: ReadonlyArray<BuyAttempt> }

/** The route has no provider to try: nothing was requested or signed. */
export class NothingEligible extends Data.TaggedError("NothingEligible")<{
  readonly capability: string
  /** The route's own message, e.g. why every candidate was rejected. */
  readonly reason: string
  readonly rejected: number
}> {}

/** Every provider was tried and none was paid: each attempt says why. */
export class AllProvidersFailed extends Data.TaggedError("AllProvidersFailed")<Attempts> {}

/** Every provider tried was refused by the local spend ledger or the session cap: nothing was signed. */
export class SpendLimitReached extends Data.TaggedError("SpendLimitReached")<Attempts> {}

/** A payment settled but its provider gave no usable answer; no other provider was tried (that would pay twice). */
export class PaidButFailed extends Data.TaggedError("PaidButFailed")<Attempts> {}

/** A signed payment was sent and its outcome is unknown; it is reported, never retried. */
export class OutcomeUnknown extends Data.TaggedError("OutcomeUnknown")<Attempts> {}

/** The Sextant service could not route the purchase (unreachable, or an error answer). */
export class ServiceFailure extends Data.TaggedError("ServiceFailure")<{
  readonly step: string
  readonly reason: string
}> {}

export type BuyError =
  | NothingEligible
  | AllProvidersFailed
  | SpendLimitReached
  | PaidButFailed
  | OutcomeUnknown
  | ServiceFailure
  | SpendLedgerUnavailable

/** One stable code per failure, as the CLI prints it and the MCP tool reports it. */
export const buyErrorCode = (error: BuyError): string =>
  ({
    NothingEligible: "NOTHING_ELIGIBLE",
    AllProvidersFailed: "ALL_PROVIDERS_FAILED",
    SpendLimitReached: "SPEND_LIMIT_REACHED",
    PaidButFailed: "PAID_BUT_FAILED",
    OutcomeUnknown: "OUTCOME_UNKNOWN",
    ServiceFailure: "SERVICE_UNAVAILABLE",
    SpendLedgerUnavailable: "SPEND_LEDGER_UNAVAILABLE"
  })[error._tag]

/** A sentence for people. */
export const buyErrorMessage = (error: BuyError): string => {
  switch (error._tag) {
    case "NothingEligible":
      return `no provider of ${error.capability} is eligible (${error.rejected} rejected): ${error.reason}`
    case "AllProvidersFailed":
      return `none of the ${error.attempts.length} providers tried was paid`
    case "SpendLimitReached":
      return "the local spend window has no room for any eligible provider; nothing was signed"
    case "PaidButFailed":
      return "a payment settled but its provider gave no usable answer; no other provider was paid"
    case "OutcomeUnknown":
      return "a signed payment was sent and no answer came: it may have settled; it is not retried"
    case "ServiceFailure":
      return `the Sextant service failed while ${error.step}: ${error.reason}`
    case "SpendLedgerUnavailable":
      return `the local spend ledger is unavailable, so nothing was signed: ${error.reason}`
  }
}

/** The attempts a failure carries, for reports. */
export const attemptsOf = (error: BuyError): ReadonlyArray<BuyAttempt> => ("attempts" in error ? error.attempts : [])

/**
 * A failed call as a line: the service's error code (`{error, message}` answers) or the client's
 * own tag (an unreachable service, an answer that does not decode), then the message.
 */
export const describeFailure = (e: unknown) => {
  const { error, _tag, message } = (typeof e === "object" && e !== null ? e : {}) as {
    error?: unknown
    _tag?: unknown
    message?: unknown
  }
  const code = typeof error === "string" ? error : typeof _tag === "string" ? _tag : "Error"
  return typeof message === "string" && message !== ""
    ? `${code}: ${message}`
    : typeof e === "object"
      ? code
      : String(e)
}
