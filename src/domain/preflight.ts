import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { JsonObject } from "./json.js"
import { AgentPolicy, PolicyCode } from "./policy.js"
import { ResourcePaymentOption, ServiceStatus } from "./resources.js"
import { PaymentRequirements } from "./x402.js"

/**
 * A buyer's policy as preflight reads it: AgentPolicy, plus whether a seller Sextant knows nothing
 * about may be paid at all (a WARN `UNRATED` instead of a DENY `PAYEE_NOT_OBSERVED`).
 */
export const PreflightPolicy = Schema.Struct({
  ...AgentPolicy.fields,
  /** A URL no probe knows (its origin's probes never saw the payee either) answers WARN instead of DENY. Default false. */
  allowUnknownSellers: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "PreflightPolicy" })
export type PreflightPolicy = typeof PreflightPolicy.Type

export const HttpUrl = Schema.String.pipe(
  Schema.maxLength(2048),
  Schema.pattern(/^https?:\/\/[^\s]+$/, { message: () => "expected an http(s) URL" })
)

/**
 * What a client holds at the moment of paying: the 402 challenge (decoded, or the raw
 * `PAYMENT-REQUIRED` header), the option it chose, or both, and the URL it is paying for (taken
 * from the challenge's `resource.url` when left out).
 */
export const PreflightRequest = Schema.Struct({
  url: Schema.optional(HttpUrl),
  /** The decoded PaymentRequired (x402 v2, or v1 with `maxAmountRequired`). */
  paymentRequired: Schema.optional(JsonObject),
  /** The raw base64 `PAYMENT-REQUIRED` header. */
  paymentRequiredHeader: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(65_536))),
  /** The option the client chose; without it every option of the challenge is judged and the most favourable answers. */
  requirements: Schema.optional(PaymentRequirements),
  policy: Schema.optional(PreflightPolicy)
}).annotations({ identifier: "PreflightRequest" })
export type PreflightRequest = typeof PreflightRequest.Type

export const PreflightVerdict = Schema.Literal("ALLOW", "WARN", "DENY").annotations({ identifier: "PreflightVerdict" })
export type PreflightVerdict = typeof PreflightVerdict.Type

/** What Sextant knows of the URL: its own entries, only its origin's other entries, or nothing. */
export const PreflightRating = Schema.Literal("URL", "ORIGIN", "UNRATED").annotations({ identifier: "PreflightRating" })
export type PreflightRating = typeof PreflightRating.Type

export const PreflightCode = Schema.Union(
  PolicyCode,
  Schema.Literal(
    /** No probe of this URL or its origin saw the payTo. */
    "PAYEE_NOT_OBSERVED",
    /** Probes saw the payTo at another URL of the origin, not at this one. */
    "PAYEE_OBSERVED_AT_ORIGIN_ONLY",
    /** Sextant has no entry at this URL or its origin. */
    "UNRATED",
    /** The option asks more than the catalog advertises for the same payment (DENY past the quarantine tolerance). */
    "PRICE_ABOVE_ADVERTISED",
    /** The option asks more than the latest probe observed. */
    "PRICE_ABOVE_OBSERVED",
    "DEGRADED",
    /** Another network or asset than this deployment rates. */
    "UNSUPPORTED_PAYMENT"
  )
).annotations({ identifier: "PreflightCode" })
export type PreflightCode = typeof PreflightCode.Type

export const PreflightReason = Schema.Struct({
  code: PreflightCode,
  severity: Schema.Literal("WARN", "DENY"),
  message: Schema.String,
  /** The entry whose evidence the reason rests on; null when it rests on the absence of one. */
  resourceId: Schema.NullOr(ResourceId)
}).annotations({ identifier: "PreflightReason" })
export type PreflightReason = typeof PreflightReason.Type

/** One catalog entry the verdict read, with the evidence it holds. */
export const PreflightEvidence = Schema.Struct({
  resourceId: ResourceId,
  url: Schema.String,
  /** `url`: at the URL paid; `origin`: another entry of the same origin. */
  match: Schema.Literal("url", "origin"),
  providerId: Schema.String,
  trusted: Schema.Boolean,
  listed: Schema.Boolean,
  status: ServiceStatus,
  verificationLevel: Schema.Int,
  operatorQuarantined: Schema.Boolean,
  /** Probes saw a valid challenge there: its payees are observed ones. */
  validChallengeSeen: Schema.Boolean,
  reliability: Schema.Number,
  confidence: Schema.Number,
  observedPriceUsd: Schema.NullOr(Schema.Number),
  lastObservedAt: Schema.NullOr(Schema.String),
  /** The options the entry advertises (its payees among them). */
  paymentOptions: Schema.Array(ResourcePaymentOption)
}).annotations({ identifier: "PreflightEvidence" })
export type PreflightEvidence = typeof PreflightEvidence.Type

/** The option judged, as the client would pay it. */
export const JudgedOption = Schema.Struct({
  /** Its index in the challenge's `accepts`; null when only `requirements` were sent. */
  optionIndex: Schema.NullOr(Schema.Int),
  scheme: Schema.String,
  network: Schema.String,
  asset: Schema.String,
  payTo: Schema.String,
  /** Base units; for `upto` the ceiling authorised. */
  amount: Schema.String,
  /** Null when the asset is not this deployment's. */
  amountUsd: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "PreflightJudgedOption" })
export type JudgedOption = typeof JudgedOption.Type

export const PreflightAnswer = Schema.Struct({
  verdict: PreflightVerdict,
  reasons: Schema.Array(PreflightReason),
  url: Schema.String,
  origin: Schema.String,
  rating: PreflightRating,
  judged: JudgedOption,
  evidence: Schema.Array(PreflightEvidence),
  evaluatedAt: Schema.String
}).annotations({ identifier: "PreflightAnswer" })
export type PreflightAnswer = typeof PreflightAnswer.Type
