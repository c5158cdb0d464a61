import { Schema } from "effect"
import { EconomicEvidence } from "./evidence.js"
import { ResourceId } from "./ids.js"
import { AnyJson } from "./json.js"
import { NextCursor } from "./pagination.js"
import { ServiceStatus } from "./resources.js"

export const ProbeOutcome = Schema.Literal(
  "healthy",
  "unreachable",
  "timeout",
  "http_status",
  "no_challenge",
  "malformed_challenge",
  "no_acceptable_option",
  "refused_target",
  "executed_unpaid"
).annotations({ identifier: "ProbeOutcome" })
export type ProbeOutcome = typeof ProbeOutcome.Type

export const Observation = Schema.Struct({
  id: Schema.String,
  resourceId: ResourceId,
  observedAt: Schema.String,
  method: Schema.String,
  url: Schema.String,
  httpStatus: Schema.NullOr(Schema.Int),
  latencyMs: Schema.NullOr(Schema.Int),
  outcome: ProbeOutcome,
  x402Version: Schema.NullOr(Schema.Int),
  scheme: Schema.NullOr(Schema.String),
  network: Schema.NullOr(Schema.String),
  asset: Schema.NullOr(Schema.String),
  payTo: Schema.NullOr(Schema.String),
  amount: Schema.NullOr(Schema.String),
  maxAmount: Schema.NullOr(Schema.String),
  /** Advertised price from the challenge in USD, for price consistency. */
  priceUsd: Schema.NullOr(Schema.Number),
  detail: Schema.NullOr(Schema.String)
}).annotations({ identifier: "Observation" })
export type Observation = typeof Observation.Type

/** An observation as stored: the public record plus the catalog contradiction found when it was taken. */
export interface RecordedObservation extends Observation {
  readonly contradiction: string | null
  /**
   * The `did:jwk` key that signed the challenge's offers (`offer-receipt`), when one verified. Kept
   * in the resource's rolling window to notice a key change, not in the observation row (its
   * `detail` names the key).
   */
  readonly offerSigner?: string | null
}

/** The public record, without the internal contradiction and signer fields. */
export const publicObservation = ({
  contradiction: _contradiction,
  offerSigner: _signer,
  ...observation
}: RecordedObservation): Observation => observation

export const StatusTransition = Schema.Struct({
  resourceId: ResourceId,
  from: ServiceStatus,
  to: ServiceStatus,
  fromLevel: Schema.Int,
  toLevel: Schema.Int,
  reason: Schema.String,
  at: Schema.String
}).annotations({ identifier: "StatusTransition" })
export type StatusTransition = typeof StatusTransition.Type

export const ValidateRequest = Schema.Struct({
  resourceId: Schema.optional(ResourceId.pipe(Schema.minLength(1))),
  url: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  method: Schema.optional(Schema.Literal("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"))
}).annotations({ identifier: "ValidateRequest" })
export type ValidateRequest = typeof ValidateRequest.Type

/** The answer of one live probe: its observation, the decoded challenge, and where it left the resource. */
export const ProbeResult = Schema.Struct({
  resourceId: ResourceId,
  discovered: Schema.Boolean,
  healthy: Schema.Boolean,
  outcome: ProbeOutcome,
  observation: Observation,
  challenge: Schema.NullOr(AnyJson),
  status: ServiceStatus,
  verificationLevel: Schema.Int
}).annotations({ identifier: "ProbeResult" })
export type ProbeResult = typeof ProbeResult.Type

export const ObservationPage = Schema.Struct({
  resourceId: ResourceId,
  observations: Schema.Array(Observation),
  /** Pass as `before` to read the next (older) page; null on the last page. */
  nextBefore: Schema.NullOr(Schema.String),
  /** Pass as `cursor` to read the next (older) page; null on the last page. */
  nextCursor: NextCursor,
  /** The newest payments about the resource (not paged) with where each stands on the ledger. */
  economic: Schema.Array(EconomicEvidence)
}).annotations({ identifier: "ObservationPage" })

/** What `get_resource_health` answers: where a resource stands and the evidence that put it there. */
export const ResourceHealth = Schema.Struct({
  resourceId: ResourceId,
  status: ServiceStatus,
  verificationLevel: Schema.Int,
  transitions: Schema.Array(StatusTransition),
  latestObservation: Schema.NullOr(Observation)
}).annotations({ identifier: "ResourceHealth" })
export type ResourceHealth = typeof ResourceHealth.Type

/**
 * One hour of one resource's probes (refused targets excluded): what the metric window sums, and
 * what history keeps once raw observations are pruned. `latency` is a histogram
 * (`verification/latencySketch.ts`), `[bin, count, ...]`.
 */
export interface HourlyRollup {
  readonly startMs: number
  readonly probes: number
  readonly answered: number
  readonly healthy: number
  readonly priceMatches: number
  readonly connectFailures: number
  readonly firstHealthyMs: number | null
  readonly latency: ReadonlyArray<number>
}

/** One hour of a resource's probes as history shows it: its counts and the figures the metrics derive from them. */
export const HistoryHour = Schema.Struct({
  /** The hour's start (inclusive) and end (exclusive). */
  startAt: Schema.String,
  endAt: Schema.String,
  /** Probes in the hour, refused targets excluded. */
  probes: Schema.Int,
  answered: Schema.Int,
  healthy: Schema.Int,
  priceMatches: Schema.Int,
  connectFailures: Schema.Int,
  /** answered / probes. */
  availability: Schema.Number,
  /** healthy / answered, 0 when nothing answered. */
  paymentInterfaceSuccessRate: Schema.Number,
  /** Nearest-rank over the hour's answered probes, within the metrics' error bound; null without any. */
  p50LatencyMs: Schema.NullOr(Schema.Number),
  p95LatencyMs: Schema.NullOr(Schema.Number)
}).annotations({ identifier: "HistoryHour" })
export type HistoryHour = typeof HistoryHour.Type

/** A resource's probes hour by hour, oldest first: only hours that hold probes. */
export const ResourceHistory = Schema.Struct({
  resourceId: ResourceId,
  hours: Schema.Array(HistoryHour)
}).annotations({ identifier: "ResourceHistory" })
export type ResourceHistory = typeof ResourceHistory.Type
