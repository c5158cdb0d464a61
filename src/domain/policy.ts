import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { PaymentScheme, StellarNetwork } from "./stellar.js"

const Ratio = Schema.Number.pipe(Schema.between(0, 1))

export const AgentPolicy = Schema.Struct({
  networks: Schema.optional(Schema.Array(StellarNetwork)),
  assets: Schema.optional(Schema.Array(Schema.String)),
  schemes: Schema.optional(Schema.Array(PaymentScheme)),
  maxPricePerRequestUsd: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  minProviderReliability: Schema.optional(Ratio),
  minConfidence: Schema.optional(Ratio),
  requireTransactionVerified: Schema.optional(Schema.Boolean),
  denyProviders: Schema.optional(Schema.Array(Schema.String)),
  /** Tightens the configured evidence age limit; it can never loosen it. */
  maxVerificationAgeSeconds: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.positive()))
}).annotations({ identifier: "AgentPolicy" })
export type AgentPolicy = typeof AgentPolicy.Type

export const PolicyDecision = Schema.Literal("ALLOW", "DENY", "INSUFFICIENT_DATA").annotations({
  identifier: "PolicyDecision"
})
export type PolicyDecision = typeof PolicyDecision.Type

export const PolicyCode = Schema.Literal(
  "PRICE_EXCEEDS_LIMIT",
  "WINDOW_LIMIT_EXCEEDED",
  "PAYEE_NOT_VERIFIED",
  "NO_VERIFICATION_EVIDENCE",
  "CONFIDENCE_LIMIT",
  "VERIFICATION_TOO_OLD",
  "NETWORK_NOT_ALLOWED",
  "ASSET_NOT_ALLOWED",
  "SCHEME_NOT_ALLOWED",
  "PROVIDER_DENIED",
  "RELIABILITY_LIMIT",
  "TRANSACTION_NOT_VERIFIED",
  "SERVICE_OFFLINE",
  "QUARANTINED",
  /** The resource offers no payment option at all (e.g. found by /v1/validate without a challenge). */
  "NO_PAYMENT_OPTION"
).annotations({ identifier: "PolicyCode" })
export type PolicyCode = typeof PolicyCode.Type

export const PolicyReason = Schema.Struct({
  code: PolicyCode,
  message: Schema.String
}).annotations({ identifier: "PolicyReason" })
export type PolicyReason = typeof PolicyReason.Type

export const PolicyEvaluateRequest = Schema.Struct({
  policy: AgentPolicy,
  resourceId: ResourceId.pipe(Schema.minLength(1)),
  optionIndex: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
}).annotations({ identifier: "PolicyEvaluateRequest" })
export type PolicyEvaluateRequest = typeof PolicyEvaluateRequest.Type

export const PolicyEvaluation = Schema.Struct({
  decision: PolicyDecision,
  reasons: Schema.Array(PolicyReason),
  resourceId: ResourceId,
  /** The option judged; null when the resource offers none (DENY, NO_PAYMENT_OPTION). */
  optionIndex: Schema.NullOr(Schema.Int),
  evaluatedAt: Schema.String
}).annotations({ identifier: "PolicyEvaluation" })
export type PolicyEvaluation = typeof PolicyEvaluation.Type
