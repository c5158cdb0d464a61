import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { type ApiErrorClass, wireFields } from "./errors.js"

/**
 * A refusal of `/x402/verify` or `/x402/settle` in one body that two kinds of client read: this
 * service's `{error, message}` (plus `code` on policy denials, `retryAfterSeconds` where a wait
 * helps), and the x402 v2 VerifyResponse / SettleResponse a stock facilitator client reads
 * (`isValid` / `success` false, the reason, `payer`, and for settle `transaction: ""` and
 * `network`). The stock `HTTPFacilitatorClient` raises `VerifyError` / `SettleError` with the
 * reason only when a non-2xx body carries `isValid` / `success`; otherwise a generic Error, which a
 * seller cannot tell from a broken facilitator.
 */
export type X402Operation = "verify" | "settle"

/** The key of this service's own code and message in the x402 `extensions` field of a refusal. */
export const SEXTANT_EXTENSION = "sextant"

/**
 * The reason a stock client reads, per this service's error code: the x402 v2 error-code table
 * (§9) and the Stellar `exact` scheme's reference reasons where one says the same thing. A code
 * with no such counterpart is its own reason, in the spec's lower snake case.
 */
const REASONS: Readonly<Record<string, string>> = {
  INVALID_REQUEST: "invalid_payload",
  MALFORMED_BODY: "invalid_payload",
  NESTING_TOO_DEEP: "invalid_payload",
  PAYLOAD_TOO_LARGE: "invalid_payload",
  HEADERS_TOO_LARGE: "invalid_payload",
  UNSUPPORTED_MEDIA_TYPE: "invalid_payload",
  MALFORMED_PAYMENT_TRANSACTION: "invalid_exact_stellar_payload_malformed",
  INVALID_PAYER_SIGNATURE: "invalid_exact_stellar_payload_missing_payer_signature",
  DELEGATED_CREDENTIALS_REFUSED: "invalid_exact_stellar_payload_unsupported_credential_type",
  SOURCE_ACCOUNT_CREDENTIALS_REFUSED: "invalid_exact_stellar_payload_unsupported_credential_type",
  TRANSFER_ASSET_MISMATCH: "invalid_exact_stellar_payload_wrong_asset",
  TRANSFER_RECIPIENT_MISMATCH: "invalid_exact_stellar_payload_wrong_recipient",
  TRANSFER_AMOUNT_MISMATCH: "invalid_exact_stellar_payload_wrong_amount",
  AMOUNT_USD_MISMATCH: "invalid_payment_requirements",
  UNSUPPORTED_ASSET: "invalid_payment_requirements",
  UNSUPPORTED_PAYMENT_KIND: "unsupported_scheme",
  AUTHORIZATION_EXPIRES_TOO_LATE: "invalid_exact_stellar_signature_expiration_too_far"
}

/**
 * Outcomes nobody knows yet (the payment may have been submitted, or a backend or this service
 * failed): the spec's `unexpected_*_error`, so that no seller reads them as a refusal that moved
 * no money.
 */
const UNKNOWN_OUTCOMES = new Set([
  "SETTLEMENT_INDETERMINATE",
  "SETTLEMENT_IN_PROGRESS",
  "SETTLEMENT_UNRESOLVED",
  "ALL_FACILITATORS_FAILED",
  "NO_HEALTHY_FACILITATOR",
  "INTERNAL",
  "STORE_UNAVAILABLE"
])

/** The x402 reason of one of this service's error codes. */
export const x402ReasonOf = (code: string, operation: X402Operation): string =>
  UNKNOWN_OUTCOMES.has(code) ? `unexpected_${operation}_error` : (REASONS[code] ?? code.toLowerCase())

/** What a refusal says of the payment, read from the request where it can be: both are optional in a refusal. */
export interface RefusalContext {
  /** The payer, only when the signed transfer could be read (and, for an account, its signature verified). */
  readonly payer: string | undefined
  /** The requirements' network as sent; empty when the body names none. */
  readonly network: string
}

/** The fields of an error body: the class's `error` and `message`, and `code` / `retryAfterSeconds` where it has them. */
export interface SextantErrorBody {
  readonly error: string
  readonly message: string
  readonly code?: string
  readonly retryAfterSeconds?: number
}

const ownFields = (error: SextantErrorBody): SextantErrorBody => ({
  error: error.error,
  message: error.message,
  ...(error.code === undefined ? {} : { code: error.code }),
  ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds })
})

/** One refusal as the combined body of its operation. */
export const x402Refusal = (operation: X402Operation, error: SextantErrorBody, context: RefusalContext) => {
  const own = ownFields(error)
  const reason = x402ReasonOf(error.error, operation)
  const payer = context.payer === undefined ? {} : { payer: context.payer }
  const extensions = { [SEXTANT_EXTENSION]: own }
  return operation === "verify"
    ? { ...own, isValid: false as const, invalidReason: reason, invalidMessage: own.message, ...payer, extensions }
    : {
        ...own,
        success: false as const,
        errorReason: reason,
        errorMessage: own.message,
        ...payer,
        transaction: "" as const,
        network: context.network,
        extensions
      }
}

const OwnBody = Schema.Struct({
  error: Schema.String,
  message: Schema.String,
  code: Schema.optional(Schema.String),
  retryAfterSeconds: Schema.optional(Schema.Int)
}).annotations({
  identifier: "SextantRefusal",
  description: "this service's own code and message, as in the body's top level"
})

const x402Fields = {
  verify: {
    isValid: Schema.Literal(false),
    invalidReason: Schema.String.annotations({
      description:
        "the x402 reason (v2 error-code table, Stellar exact reasons), else this service's code in lower snake case"
    }),
    invalidMessage: Schema.String,
    payer: Schema.optional(Schema.String),
    extensions: Schema.Struct({ [SEXTANT_EXTENSION]: OwnBody })
  },
  settle: {
    success: Schema.Literal(false),
    errorReason: Schema.String.annotations({
      description:
        "the x402 reason (v2 error-code table, Stellar exact reasons), else this service's code in lower snake case"
    }),
    errorMessage: Schema.String,
    payer: Schema.optional(Schema.String),
    transaction: Schema.Literal(""),
    network: Schema.String,
    extensions: Schema.Struct({ [SEXTANT_EXTENSION]: OwnBody })
  }
} as const

interface OwnExtension {
  readonly extensions: { readonly [SEXTANT_EXTENSION]: SextantErrorBody }
}

/** A refusal of verify: this service's body and the x402 VerifyResponse. */
export type VerifyRefusalBody = SextantErrorBody &
  OwnExtension & {
    readonly isValid: false
    readonly invalidReason: string
    readonly invalidMessage: string
    readonly payer?: string
  }

/** A refusal of settle: this service's body and the x402 SettleResponse. */
export type SettleRefusalBody = SextantErrorBody &
  OwnExtension & {
    readonly success: false
    readonly errorReason: string
    readonly errorMessage: string
    readonly payer?: string
    readonly transaction: ""
    readonly network: string
  }

/**
 * The schema of one error class's refusal on `operation`: the class's own fields (its literal
 * `error`, so each code keeps its status) and the x402 fields, with the class's status. Declared by
 * the x402 endpoints, so `/openapi.json` describes the combined body, and what HttpApi encodes a
 * refusal with. Typed as the body every refusal of the operation shares: which code it is, the
 * class said.
 */
const refusalSchema = (operation: X402Operation, errorClass: ApiErrorClass): Schema.Schema.Any =>
  Schema.Struct({ ...wireFields(errorClass), ...x402Fields[operation] } as Schema.Struct.Fields).annotations({
    identifier: `${operation === "verify" ? "VerifyRefusal" : "SettleRefusal"}${errorClass.identifier}`,
    description:
      `${errorClass.identifier} on /x402/${operation}: this service's {error, message} and the x402 ` +
      `${operation === "verify" ? "VerifyResponse" : "SettleResponse"} in one body`,
    ...HttpApiSchema.annotations({ status: HttpApiSchema.getStatusErrorAST(errorClass.ast) })
  })

export const verifyRefusalSchema = (errorClass: ApiErrorClass) =>
  refusalSchema("verify", errorClass) as unknown as Schema.Schema<VerifyRefusalBody>

export const settleRefusalSchema = (errorClass: ApiErrorClass) =>
  refusalSchema("settle", errorClass) as unknown as Schema.Schema<SettleRefusalBody>
