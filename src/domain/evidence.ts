import { Schema } from "effect"
import type { ResourceId } from "./ids.js"
import { emptyMetrics, type ResourceMetrics } from "./metrics.js"
import type { PurchaseOutcome } from "./outcomes.js"
import type { ResourcePaymentOption, ResourceRecord, ServiceStatus } from "./resources.js"

/**
 * Everything policy and routing may know about a resource: derived from stored observations and
 * economic events only. Built by verification, read by policy, routing and settlement.
 */
export interface ResourceEvidence {
  readonly resourceId: ResourceId
  readonly status: ServiceStatus
  readonly verificationLevel: number
  readonly metrics: ResourceMetrics
  /** Time of the newest observation of any outcome, ISO; null when never probed. */
  readonly lastObservedAt: string | null
  /** A decodable challenge with an acceptable option was seen at least once. */
  readonly validChallengeSeen: boolean
  /** A settlement to this payee succeeded, or a receipt with a transaction hash names the resource. */
  readonly transactionVerified: boolean
  /** An operator quarantined it (absent: not known to the reader, taken as no). */
  readonly operatorQuarantined?: boolean
}

/** A listed resource that pays a payee, with its evidence: what settlement judges a payee by. */
export interface PayeeEvidence {
  readonly record: ResourceRecord
  readonly evidence: ResourceEvidence
}

/**
 * A resource's evidence, its provider, URL and trust, without the rest of the record: all a payee
 * check judges (settlement/rules.ts, payeeDenial).
 */
export interface ProviderEvidence {
  readonly providerId: string
  readonly evidence: ResourceEvidence
  readonly url: string
  /** From the catalog file or listed by an operator (docs/trust.md). */
  readonly trusted: boolean
}

export const providerEvidenceOf = ({ record, evidence }: PayeeEvidence): ProviderEvidence => ({
  providerId: record.provider.id,
  evidence,
  url: record.resource.url,
  trusted: record.listing.trusted
})

/** Who reported a payment: a settle through this service, a receipt, an economic probe, or a buyer's outcome report. */
export type EconomicSource = "settlement" | "receipt" | "probe" | "outcome"

/**
 * Where a payment stands as evidence. `pending` until the ledger is read; `confirmed` once its
 * transaction is found, succeeded and transfers what was expected; `rejected` when it is not found
 * in time or does not match (never counts); `failed` when a facilitator or the probe's own
 * payment observed the payment fail (counts against the transaction success rate).
 */
export type EconomicState = "pending" | "confirmed" | "rejected" | "failed"

/** The transfer a confirming transaction must carry: to `payTo`, exactly `amount` (`exact`) or at most it (`upto`). */
export interface ExpectedTransfer {
  readonly payTo: string
  readonly amount: string
  readonly scheme: "exact" | "upto"
}

/** What an economic probe saw beyond the payment itself. */
export interface ProbeDetail {
  readonly priceUsd: number
  readonly settleLatencyMs: number
  readonly httpStatus: number
  /** The paid response's body is JSON and its content type is the one the resource declared. */
  readonly bodyMatchesType: boolean
}

/** A payment outcome as reported; it becomes evidence only as the ledger confirms it. */
export interface EconomicEvent {
  readonly source: EconomicSource
  readonly resourceId: ResourceId | null
  readonly payTo: string | null
  /** The outcome as reported: by the facilitator's settle answer, the buyer's receipt, or the probe's payment. */
  readonly success: boolean
  readonly transactionHash: string | null
  /** The claimed time of the payment, ISO. */
  readonly at: string
  readonly payer: string | null
  /** Null when there is nothing to check a transaction against. */
  readonly expected: ExpectedTransfer | null
  readonly probe?: ProbeDetail
  /** Why it is no evidence whatever the ledger shows (a payment below the resource's price): stored rejected at once. */
  readonly notEvidence?: string
  /** A buyer's outcome report: what the buyer said became of the purchase. */
  readonly outcome?: PurchaseOutcome
}

/** What a resource nobody has probed, or nobody knows, looks like: no evidence at all. */
export const noEvidence = (resourceId: ResourceId): ResourceEvidence => ({
  resourceId,
  status: "DISCOVERED",
  verificationLevel: 0,
  metrics: emptyMetrics(resourceId),
  lastObservedAt: null,
  validChallengeSeen: false,
  transactionVerified: false
})

/** The transfer a payment option makes a confirming transaction carry. */
export const expectedTransfer = (option: {
  readonly payTo: string
  readonly scheme: "exact" | "upto"
  readonly amount: string
  readonly maxAmount?: string | undefined
}): ExpectedTransfer => ({
  payTo: option.payTo,
  amount: option.scheme === "upto" ? (option.maxAmount ?? option.amount) : option.amount,
  scheme: option.scheme
})

/**
 * Why a settle's transfer is no evidence about a resource, or null when it is: it must be paid
 * through one of the resource's options (network, asset, payee, scheme) and cost what that option
 * claims: at least its price for `exact`, more than nothing and within its ceiling for `upto`. A
 * payment of two base units must not buy the standing a real purchase earns.
 */
export const evidenceShortfall = (
  resource: { readonly id: string; readonly paymentOptions: ReadonlyArray<ResourcePaymentOption> },
  paid: {
    readonly network: string
    readonly asset: string
    readonly payTo: string
    readonly scheme: string
    readonly amount: bigint
  }
): string | null => {
  const options = resource.paymentOptions.filter(
    (o) => o.network === paid.network && o.asset === paid.asset && o.payTo === paid.payTo && o.scheme === paid.scheme
  )
  if (options.length === 0) {
    return `resource ${resource.id} has no ${paid.scheme} option paying ${paid.payTo} in ${paid.asset} on ${paid.network}: no evidence about it`
  }
  const fits = (o: ResourcePaymentOption) =>
    o.scheme === "upto"
      ? paid.amount > 0n && paid.amount <= BigInt(o.maxAmount ?? o.amount)
      : paid.amount >= BigInt(o.amount)
  if (options.some(fits)) return null
  const asked = options
    .map((o) => (o.scheme === "upto" ? `at most ${o.maxAmount ?? o.amount}` : `at least ${o.amount}`))
    .join(" or ")
  return `the payment transfers ${paid.amount} base units where resource ${resource.id} asks ${asked}: it is no evidence about it`
}

const ProbeDetailSchema = Schema.Struct({
  priceUsd: Schema.Number,
  settleLatencyMs: Schema.Number,
  httpStatus: Schema.Int,
  bodyMatchesType: Schema.Boolean
}).annotations({ identifier: "EconomicProbeDetail" })

/** One payment as evidence, as `GET /v1/resources/{id}` and `/observations` show it. */
export const EconomicEvidence = Schema.Struct({
  id: Schema.String,
  source: Schema.Literal("settlement", "receipt", "probe", "outcome"),
  state: Schema.Literal("pending", "confirmed", "rejected", "failed"),
  /** Why it is in this state (what the ledger showed, or why it cannot count). */
  reason: Schema.NullOr(Schema.String),
  transactionHash: Schema.NullOr(Schema.String),
  payTo: Schema.NullOr(Schema.String),
  /** The claimed time of the payment. */
  at: Schema.String,
  stateChangedAt: Schema.NullOr(Schema.String),
  /** The ledger the confirming transaction closed in. */
  ledger: Schema.NullOr(Schema.Int),
  probe: Schema.optional(ProbeDetailSchema)
}).annotations({ identifier: "EconomicEvidence" })
export type EconomicEvidence = typeof EconomicEvidence.Type
