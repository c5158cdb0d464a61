import { emptyMetrics, type ResourceMetrics } from "./metrics.js"
import type { ResourceRecord, ServiceStatus } from "./resources.js"

/**
 * Everything policy and routing may know about a resource: derived from stored observations and
 * economic events only. Built by verification, read by policy, routing and settlement.
 */
export interface ResourceEvidence {
  readonly resourceId: string
  readonly status: ServiceStatus
  readonly verificationLevel: number
  readonly metrics: ResourceMetrics
  /** Time of the newest observation of any outcome, ISO; null when never probed. */
  readonly lastObservedAt: string | null
  /** A decodable challenge with an acceptable option was seen at least once. */
  readonly validChallengeSeen: boolean
  /** A settlement to this payee succeeded, or a receipt with a transaction hash names the resource. */
  readonly transactionVerified: boolean
}

/** A listed resource that pays a payee, with its evidence: what settlement judges a payee by. */
export interface PayeeEvidence {
  readonly record: ResourceRecord
  readonly evidence: ResourceEvidence
}

/** A payment outcome reported by settlement or receipts: the only input to transaction evidence. */
export interface EconomicEvent {
  readonly source: "settlement" | "receipt"
  readonly resourceId: string | null
  readonly payTo: string | null
  readonly success: boolean
  readonly transactionHash: string | null
  readonly at: string
}

/** What a resource nobody has probed, or nobody knows, looks like: no evidence at all. */
export const noEvidence = (resourceId: string): ResourceEvidence => ({
  resourceId,
  status: "DISCOVERED",
  verificationLevel: 0,
  metrics: emptyMetrics(resourceId),
  lastObservedAt: null,
  validChallengeSeen: false,
  transactionVerified: false
})
