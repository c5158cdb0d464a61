import { Schema } from "effect"
import { ApiError } from "./apiError.js"
import { PolicyCode } from "./policy.js"

/** The error classes, one per `error` code, built by `ApiError` (`apiError.ts`, which says how they reach the wire). */
export { type ApiErrorClass, ErrorBody, type WireFields, wire, wireFields } from "./apiError.js"

// 400: the request itself is wrong.
export class InvalidRequest extends ApiError<InvalidRequest>()(
  "InvalidRequest",
  "INVALID_REQUEST",
  400,
  "the request does not match its schema (every failing field is named) or asks for something contradictory"
) {}
export class MalformedBody extends ApiError<MalformedBody>()(
  "MalformedBody",
  "MALFORMED_BODY",
  400,
  "the body is not valid JSON or could not be read"
) {}
export class NestingTooDeep extends ApiError<NestingTooDeep>()(
  "NestingTooDeep",
  "NESTING_TOO_DEEP",
  400,
  "the body nests objects and arrays deeper than 64 levels"
) {}
export class TargetRefused extends ApiError<TargetRefused>()(
  "TargetRefused",
  "TARGET_REFUSED",
  400,
  "the URL to probe is not a public target (loopback, private, link-local or metadata address) or not an absolute http(s) URL"
) {}
export class MalformedPaymentTransaction extends ApiError<MalformedPaymentTransaction>()(
  "MalformedPaymentTransaction",
  "MALFORMED_PAYMENT_TRANSACTION",
  400,
  "the payload's transaction is not one Stellar SEP-41 transfer"
) {}
/** The payer's Ed25519 signature over its authorisation does not verify: the payment could never settle, so no fee is reserved for it. */
export class InvalidPayerSignature extends ApiError<InvalidPayerSignature>()(
  "InvalidPayerSignature",
  "INVALID_PAYER_SIGNATURE",
  400,
  "the payer's signature on its Soroban authorisation does not verify for this network"
) {}
/** CAP-71 delegated credentials: the x402 reference facilitator refuses them, and no single payer nonce identifies the payment. */
export class DelegatedCredentialsRefused extends ApiError<DelegatedCredentialsRefused>()(
  "DelegatedCredentialsRefused",
  "DELEGATED_CREDENTIALS_REFUSED",
  422,
  "the payment authorises with SOROBAN_CREDENTIALS_ADDRESS_WITH_DELEGATES, which is not settled (only ADDRESS and ADDRESS_V2 are)"
) {}
/** Source-account credentials would be authorised by whoever submits the transaction: the facilitator, not the payer. */
export class SourceAccountCredentialsRefused extends ApiError<SourceAccountCredentialsRefused>()(
  "SourceAccountCredentialsRefused",
  "SOURCE_ACCOUNT_CREDENTIALS_REFUSED",
  422,
  "the payment authorises with SOROBAN_CREDENTIALS_SOURCE_ACCOUNT, which is not settled (only ADDRESS and ADDRESS_V2 are)"
) {}
export class TransferAssetMismatch extends ApiError<TransferAssetMismatch>()(
  "TransferAssetMismatch",
  "TRANSFER_ASSET_MISMATCH",
  400,
  "the signed transfer pays in another asset contract than the requirements"
) {}
export class TransferRecipientMismatch extends ApiError<TransferRecipientMismatch>()(
  "TransferRecipientMismatch",
  "TRANSFER_RECIPIENT_MISMATCH",
  400,
  "the signed transfer pays another address than the requirements' payTo"
) {}
export class TransferAmountMismatch extends ApiError<TransferAmountMismatch>()(
  "TransferAmountMismatch",
  "TRANSFER_AMOUNT_MISMATCH",
  400,
  "the signed transfer moves another amount than the requirements allow"
) {}
export class AmountUsdMismatch extends ApiError<AmountUsdMismatch>()(
  "AmountUsdMismatch",
  "AMOUNT_USD_MISMATCH",
  400,
  "amountUsd is not the amount in base units at the asset's decimals"
) {}

export class Unauthorized extends ApiError<Unauthorized>()(
  "Unauthorized",
  "UNAUTHORIZED",
  401,
  "a configured API key is needed (Authorization: Bearer)"
) {}

/** A policy refused the payment; `code` says which rule. */
export class PolicyDenied extends ApiError<PolicyDenied>()(
  "PolicyDenied",
  "POLICY_DENIED",
  403,
  "a buyer policy refused the payment; code names the rule",
  { code: PolicyCode }
) {}

/**
 * Without API keys every caller is anonymous, so only where a request was addressed tells a local
 * client from a web page that rebound its name to this machine or posts to it cross-site.
 */
export class ForeignOrigin extends ApiError<ForeignOrigin>()(
  "ForeignOrigin",
  "FOREIGN_ORIGIN",
  403,
  "without API keys, requests must be addressed to a loopback name, the configured host or allowedHosts, and carry no other Origin"
) {}

/** Curation has an author: it needs an API key whose role is operator (never open mode, never a buyer key). */
export class OperatorOnly extends ApiError<OperatorOnly>()(
  "OperatorOnly",
  "OPERATOR_ONLY",
  403,
  "this endpoint needs an API key whose role is operator; buyer keys and open mode (no keys configured) are refused"
) {}

export class NotFound extends ApiError<NotFound>()(
  "NotFound",
  "NOT_FOUND",
  404,
  "no such endpoint, resource, receipt or settlement"
) {}
export class MethodNotAllowed extends ApiError<MethodNotAllowed>()(
  "MethodNotAllowed",
  "METHOD_NOT_ALLOWED",
  405,
  "the path exists, the method does not (see Allow)"
) {}

// 409: the request repeats one already journaled.
export class IdempotencyKeyReused extends ApiError<IdempotencyKeyReused>()(
  "IdempotencyKeyReused",
  "IDEMPOTENCY_KEY_REUSED",
  409,
  "the Idempotency-Key was used for a different request"
) {}
export class PaymentAlreadySubmitted extends ApiError<PaymentAlreadySubmitted>()(
  "PaymentAlreadySubmitted",
  "PAYMENT_ALREADY_SUBMITTED",
  409,
  "this signed payment was submitted with different requirements"
) {}
/** The payer's authorisation nonce is already spent on the ledger: this signed payment can never execute again. */
export class NonceAlreadyConsumed extends ApiError<NonceAlreadyConsumed>()(
  "NonceAlreadyConsumed",
  "NONCE_ALREADY_CONSUMED",
  409,
  "the payer's authorisation nonce is already consumed on the ledger; the payment was not forwarded"
) {}
/**
 * The payer's authorisation stays valid far longer than the requirements' `maxTimeoutSeconds`
 * allows: whoever holds it could settle it much later, and the reconciler would not look where it landed.
 */
export class AuthorizationExpiresTooLate extends ApiError<AuthorizationExpiresTooLate>()(
  "AuthorizationExpiresTooLate",
  "AUTHORIZATION_EXPIRES_TOO_LATE",
  400,
  "the payer's authorisation is valid far beyond the requirements' maxTimeoutSeconds; it was not forwarded"
) {}
export class SettlementInProgress extends ApiError<SettlementInProgress>()(
  "SettlementInProgress",
  "SETTLEMENT_IN_PROGRESS",
  409,
  "the settlement of this payment is still in flight"
) {}
/** A repeat of a payment whose earlier settlement is journaled `indeterminate` (the 502 below, replayed). */
export class SettlementUnresolved extends ApiError<SettlementUnresolved>()(
  "SettlementUnresolved",
  "SETTLEMENT_UNRESOLVED",
  409,
  "an earlier settlement of this payment has an unknown outcome; it is never re-submitted"
) {}

/** Deleting a catalog-file entry would be undone at the next start: edit the file, or unlist it. */
export class ConfigManaged extends ApiError<ConfigManaged>()(
  "ConfigManaged",
  "CONFIG_MANAGED",
  409,
  "the resource comes from the catalog file: remove it there (unlist it to withdraw it now)"
) {}

export class PayloadTooLarge extends ApiError<PayloadTooLarge>()(
  "PayloadTooLarge",
  "PAYLOAD_TOO_LARGE",
  413,
  "request bodies are limited to 1 MiB"
) {}
/** The request line and headers together are over 16 KiB. */
export class HeadersTooLarge extends ApiError<HeadersTooLarge>()(
  "HeadersTooLarge",
  "HEADERS_TOO_LARGE",
  431,
  "the request line and headers together are limited to 16 KiB"
) {}
export class UnsupportedMediaType extends ApiError<UnsupportedMediaType>()(
  "UnsupportedMediaType",
  "UNSUPPORTED_MEDIA_TYPE",
  415,
  "request bodies must be application/json"
) {}

// 422: well-formed, but this service cannot act on it.
export class UnsupportedPaymentKind extends ApiError<UnsupportedPaymentKind>()(
  "UnsupportedPaymentKind",
  "UNSUPPORTED_PAYMENT_KIND",
  422,
  "no configured facilitator supports the network and scheme"
) {}
export class UnsupportedAsset extends ApiError<UnsupportedAsset>()(
  "UnsupportedAsset",
  "UNSUPPORTED_ASSET",
  422,
  "the payment is not in the configured asset, the only one this service values"
) {}
export class NoEligibleProvider extends ApiError<NoEligibleProvider>()(
  "NoEligibleProvider",
  "NO_ELIGIBLE_PROVIDER",
  422,
  "routing found no eligible provider for the purchase"
) {}
export class TransactionNotConfirmed extends ApiError<TransactionNotConfirmed>()(
  "TransactionNotConfirmed",
  "TRANSACTION_NOT_CONFIRMED",
  422,
  "the ledger does not show the reported transaction paying the resource's payee at least its price"
) {}
export class PaymentMismatch extends ApiError<PaymentMismatch>()(
  "PaymentMismatch",
  "PAYMENT_MISMATCH",
  422,
  "the payment does not agree with a payment option of the service"
) {}

/** `retryAfterSeconds` is also sent as a `Retry-After` header. */
export class FeeBudgetExhausted extends ApiError<FeeBudgetExhausted>()(
  "FeeBudgetExhausted",
  "FEE_BUDGET_EXHAUSTED",
  429,
  "a sponsored-fee budget is exhausted for the window",
  { retryAfterSeconds: Schema.Int }
) {}

/**
 * Per principal and endpoint group (`limits` in the config), shared by every instance on one store.
 * `retryAfterSeconds` is also sent as a `Retry-After` header.
 */
export class RateLimited extends ApiError<RateLimited>()(
  "RateLimited",
  "RATE_LIMITED",
  429,
  "too many requests from this principal (API key, else client address) for this endpoint",
  { retryAfterSeconds: Schema.Int }
) {}

export class InternalError extends ApiError<InternalError>()(
  "InternalError",
  "INTERNAL",
  500,
  "an unexpected failure; it has been logged"
) {}

// 502: the facilitators did not give a usable answer.
export class AllFacilitatorsFailed extends ApiError<AllFacilitatorsFailed>()(
  "AllFacilitatorsFailed",
  "ALL_FACILITATORS_FAILED",
  502,
  "every eligible facilitator failed"
) {}
export class NoHealthyFacilitator extends ApiError<NoHealthyFacilitator>()(
  "NoHealthyFacilitator",
  "NO_HEALTHY_FACILITATOR",
  502,
  "every facilitator supporting the payment is unhealthy"
) {}
export class SettlementIndeterminate extends ApiError<SettlementIndeterminate>()(
  "SettlementIndeterminate",
  "SETTLEMENT_INDETERMINATE",
  502,
  "the facilitator gave no usable answer: the payment may have been submitted"
) {}

export class LedgerNotReadable extends ApiError<LedgerNotReadable>()(
  "LedgerNotReadable",
  "LEDGER_NOT_READABLE",
  503,
  "the ledger could not be read to check a reported transaction; nothing was recorded"
) {}
export class StoreUnavailable extends ApiError<StoreUnavailable>()(
  "StoreUnavailable",
  "STORE_UNAVAILABLE",
  503,
  "the store could not complete the request"
) {}

// 503 that pass by themselves: come back after `retryAfterSeconds` (also sent as `Retry-After`).
/**
 * A facilitator has not answered `/supported` yet (the first poll is slow, or the backend was down
 * at start), so whether it supports the kind is not known: not a refusal, unlike 422.
 */
export class FacilitatorsNotReady extends ApiError<FacilitatorsNotReady>()(
  "FacilitatorsNotReady",
  "FACILITATORS_NOT_READY",
  503,
  "no facilitator has said yet whether it supports the payment kind; retry after Retry-After",
  { retryAfterSeconds: Schema.Int }
) {}
/** The process is shutting down: in-flight requests finish, new ones go to another instance. */
export class ShuttingDown extends ApiError<ShuttingDown>()(
  "ShuttingDown",
  "SHUTTING_DOWN",
  503,
  "this instance is shutting down and takes no new requests; retry (another instance) after Retry-After",
  { retryAfterSeconds: Schema.Int }
) {}
/** `/health/ready` while the instance cannot serve yet (or any more): the message says why. */
export class NotReady extends ApiError<NotReady>()(
  "NotReady",
  "NOT_READY",
  503,
  "the instance is not ready to serve (the message says why)"
) {}

export const notFound = (what: string, id: string) => new NotFound({ message: `no ${what} with id "${id}"` })
