import { Schema } from "effect"
import type { OperatorQuarantine } from "./curation.js"
import { ResourceId } from "./ids.js"
import type { ServiceStatus } from "./resources.js"

const Ratio = Schema.Number.pipe(Schema.between(0, 1))

export const ResourceMetrics = Schema.Struct({
  resourceId: ResourceId,
  availability24h: Ratio,
  paymentInterfaceSuccessRate: Ratio,
  /** From economic evidence (settlements, receipts with a transaction hash) only; 0 without any. */
  transactionSuccessRate: Ratio,
  p50LatencyMs: Schema.NullOr(Schema.Int),
  p95LatencyMs: Schema.NullOr(Schema.Int),
  observedPriceUsd: Schema.NullOr(Schema.Number),
  priceConsistency: Ratio,
  reliability: Ratio,
  confidence: Ratio,
  observationCount: Schema.Int,
  lastVerified: Schema.NullOr(Schema.String)
}).annotations({ identifier: "ResourceMetrics" })
export type ResourceMetrics = typeof ResourceMetrics.Type

/**
 * What the per-resource metrics row keeps, refreshed from the window each time evidence arrives.
 * Confidence is not stored: it depends on the time of reading.
 */
export interface MetricsSnapshot extends Omit<ResourceMetrics, "confidence"> {
  /** Newest probe in the window, ISO; null without any. */
  readonly lastObservedAt: string | null
  /** A valid challenge was seen at least once, in this window or before. */
  readonly validChallengeSeen: boolean
  /** A settlement or receipt with a transaction succeeded for this resource or its payee. */
  readonly transactionVerified: boolean
}

/** A resource's stored status and level with its metrics row, null when it was never measured. */
export interface StoredStanding {
  readonly resourceId: ResourceId
  readonly status: ServiceStatus
  readonly level: number
  readonly snapshot: MetricsSnapshot | null
  /** An operator's quarantine in force: the status derived from evidence stays QUARANTINED while it holds. */
  readonly operatorQuarantine: OperatorQuarantine | null
}

/** The metrics a resource with no evidence reports: zeros and nulls, never placeholders. */
export const emptyMetrics = (resourceId: ResourceId): ResourceMetrics => ({
  resourceId,
  availability24h: 0,
  paymentInterfaceSuccessRate: 0,
  transactionSuccessRate: 0,
  p50LatencyMs: null,
  p95LatencyMs: null,
  observedPriceUsd: null,
  priceConsistency: 0,
  reliability: 0,
  confidence: 0,
  observationCount: 0,
  lastVerified: null
})
