import { Schema } from "effect"
import { PrincipalId, SettlementId } from "./ids.js"
import { JsonObject } from "./json.js"
import { AgentPolicy } from "./policy.js"
import { BaseUnits, ContractId, PaymentScheme, StellarAddress, StellarNetwork } from "./stellar.js"

export const SupportedAsset = Schema.Struct({
  network: StellarNetwork,
  assetContract: ContractId,
  symbol: Schema.String,
  decimals: Schema.Literal(7),
  minimumAmount: BaseUnits,
  maximumAmount: BaseUnits
}).annotations({ identifier: "SupportedAsset" })
export type SupportedAsset = typeof SupportedAsset.Type

export const SupportedKind = Schema.Struct({
  x402Version: Schema.Int,
  scheme: PaymentScheme,
  network: StellarNetwork,
  extra: Schema.optionalWith(JsonObject, { default: () => ({}) })
}).annotations({ identifier: "SupportedKind" })
export type SupportedKind = typeof SupportedKind.Type

export const SupportedResponse = Schema.Struct({
  kinds: Schema.Array(SupportedKind),
  extensions: Schema.Array(Schema.String),
  signers: JsonObject
}).annotations({ identifier: "SupportedResponse" })
export type SupportedResponse = typeof SupportedResponse.Type

const Passthrough = JsonObject

/**
 * Stock x402 v2 PaymentRequirements. Known fields are typed; anything else a newer client sends
 * is kept and forwarded untouched, since the payload must reach the facilitator as signed.
 */
export const PaymentRequirements = Schema.Struct(
  {
    scheme: Schema.String,
    network: Schema.String,
    amount: Schema.String,
    asset: Schema.String,
    payTo: Schema.String,
    maxTimeoutSeconds: Schema.optional(Schema.Number),
    extra: Schema.optional(Passthrough)
  },
  Passthrough
).annotations({ identifier: "PaymentRequirements" })

export const PaymentPayload = Schema.Struct(
  {
    x402Version: Schema.Int,
    accepted: Schema.optional(Passthrough),
    payload: Passthrough
  },
  Passthrough
).annotations({ identifier: "PaymentPayload" })

export const FacilitatorRequest = Schema.Struct(
  {
    x402Version: Schema.Int,
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements
  },
  Passthrough
).annotations({ identifier: "FacilitatorRequest" })
export type FacilitatorRequest = typeof FacilitatorRequest.Type

export const VerifyResponse = Schema.Struct(
  {
    isValid: Schema.Boolean,
    invalidReason: Schema.optional(Schema.String),
    invalidMessage: Schema.optional(Schema.String),
    payer: Schema.optional(Schema.String),
    /** What each extension of the payment came to, keyed by extension (x402 2.27), as `EXTENSION-RESPONSES` says. */
    extensionResponses: Schema.optional(JsonObject)
  },
  Passthrough
).annotations({ identifier: "VerifyResponse" })

export const SettleResponse = Schema.Struct(
  {
    success: Schema.Boolean,
    errorReason: Schema.optional(Schema.String),
    errorMessage: Schema.optional(Schema.String),
    payer: Schema.optional(Schema.String),
    transaction: Schema.String,
    network: Schema.String,
    amount: Schema.optional(Schema.String),
    /** What each extension of the payment came to, keyed by extension (x402 2.27), as `EXTENSION-RESPONSES` says. */
    extensionResponses: Schema.optional(JsonObject)
  },
  Passthrough
).annotations({ identifier: "SettleResponse" })

/**
 * A per-request buyer policy carried inside paymentRequirements on `/x402/settle`: the SPEC names
 * `maxPricePerRequestUsd`; settlement honours every AgentPolicy field. Unknown fields are refused
 * whatever the caller's parse options: a misspelled limit silently dropped would let the payment
 * settle without it.
 */
export const ServicePolicy = AgentPolicy.annotations({
  identifier: "ServicePolicy",
  parseOptions: { errors: "all", onExcessProperty: "error" }
})

/**
 * The requirements of a settle: stock fields, those settlement judges read strictly (a Stellar
 * payee, an amount in base units), and this service's own two, which are never forwarded.
 */
export const SettleRequirements = Schema.Struct(
  {
    ...PaymentRequirements.fields,
    payTo: StellarAddress,
    amount: BaseUnits,
    /** The authorised ceiling of an `upto` payment. */
    maxAmount: Schema.optional(BaseUnits),
    /** Optional: a stock resource server sends no proprietary field; when given it must equal `amount` at 7 decimals. */
    amountUsd: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
    servicePolicy: Schema.optional(ServicePolicy)
  },
  Passthrough
).annotations({ identifier: "SettleRequirements" })

/** A Stellar payment payload: the signed transaction envelope, base64 XDR. */
export const SettlePaymentPayload = Schema.Struct(
  {
    ...PaymentPayload.fields,
    payload: Schema.Struct({ transaction: Schema.String.pipe(Schema.minLength(1)) }, Passthrough)
  },
  Passthrough
).annotations({ identifier: "SettlePaymentPayload" })

export const SettleRequest = Schema.Struct(
  {
    x402Version: Schema.Int,
    paymentPayload: SettlePaymentPayload,
    paymentRequirements: SettleRequirements
  },
  Passthrough
).annotations({ identifier: "SettleRequest" })
export type SettleRequest = typeof SettleRequest.Type

/**
 * The `Idempotency-Key` header of `/x402/settle`: 1 to 200 characters. An empty header is refused
 * rather than taken as a key every keyless client would share.
 */
export const IdempotencyKey = Schema.String.pipe(
  Schema.minLength(1, { message: () => "Idempotency-Key must not be empty" }),
  Schema.maxLength(200, { message: () => "Idempotency-Key must be at most 200 characters" })
).annotations({ identifier: "IdempotencyKey" })

export const FacilitatorStatus = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  healthy: Schema.Boolean,
  lastCheckedAt: Schema.NullOr(Schema.String),
  lastError: Schema.NullOr(Schema.String),
  capabilityCount: Schema.Int,
  kinds: Schema.Array(SupportedKind),
  /** The embedded Stellar facilitator's fee account, balance and channels (docs/facilitator.md); absent for an HTTP backend. */
  embedded: Schema.optional(
    Schema.Struct({
      network: Schema.String,
      feeAccount: Schema.String,
      feeBalanceStroops: Schema.NullOr(Schema.String),
      minFeeBalanceStroops: Schema.String,
      channels: Schema.Int,
      leasesInUse: Schema.Int,
      settles: Schema.Struct({ settled: Schema.Int, failed: Schema.Int, pending: Schema.Int, refused: Schema.Int })
    })
  )
}).annotations({ identifier: "FacilitatorStatus" })
export type FacilitatorStatus = typeof FacilitatorStatus.Type

export const FacilitatorsResponse = Schema.Struct({
  facilitators: Schema.Array(FacilitatorStatus)
}).annotations({ identifier: "FacilitatorsResponse" })

export const SettlementState = Schema.Literal("pending", "settled", "failed", "indeterminate")

export const SettlementRecord = Schema.Struct({
  id: SettlementId,
  idempotencyKey: Schema.String,
  state: SettlementState,
  principal: PrincipalId,
  network: Schema.String,
  scheme: Schema.String,
  payTo: Schema.String,
  amount: Schema.String,
  worstCaseUsd: Schema.Number,
  backendId: Schema.NullOr(Schema.String),
  transaction: Schema.NullOr(Schema.String),
  payer: Schema.NullOr(Schema.String),
  errors: Schema.Array(Schema.Struct({ backendId: Schema.String, error: Schema.String })),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  /** Every change of state, oldest first, with its reason and time. */
  history: Schema.Array(
    Schema.Struct({
      from: Schema.NullOr(SettlementState),
      to: SettlementState,
      reason: Schema.String,
      at: Schema.String
    })
  )
}).annotations({ identifier: "SettlementRecord" })
export type SettlementRecord = typeof SettlementRecord.Type
