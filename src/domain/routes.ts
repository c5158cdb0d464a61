import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { ResourceMetrics } from "./metrics.js"
import { PAGE_LIMITS } from "./pagination.js"
import { AgentPolicy, PolicyReason } from "./policy.js"
import { ResourcePaymentOption } from "./resources.js"
import { Capability } from "./stellar.js"

export const OptimizeFor = Schema.Literal("balanced", "cheapest", "fastest", "reliable").annotations({
  identifier: "OptimizeFor"
})
export type OptimizeFor = typeof OptimizeFor.Type

export const RouteRequest = Schema.Struct({
  capability: Capability,
  constraints: Schema.optional(AgentPolicy),
  optimizeFor: Schema.optional(OptimizeFor),
  /** At most this many fallbacks and this many rejections in the answer (default 20). */
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, PAGE_LIMITS.routes.max)))
}).annotations({ identifier: "RouteRequest" })
export type RouteRequest = typeof RouteRequest.Type

export const RankedCandidate = Schema.Struct({
  rank: Schema.Int,
  resourceId: ResourceId,
  providerId: Schema.String,
  optionIndex: Schema.Int,
  option: ResourcePaymentOption,
  worstCaseUsd: Schema.Number,
  score: Schema.Number,
  metrics: ResourceMetrics
}).annotations({ identifier: "RankedCandidate" })
export type RankedCandidate = typeof RankedCandidate.Type

export const RejectedCandidate = Schema.Struct({
  resourceId: ResourceId,
  providerId: Schema.String,
  optionIndex: Schema.NullOr(Schema.Int),
  /** INSUFFICIENT_DATA when only missing or stale evidence rejects it (a probe may change that), else DENY. */
  decision: Schema.Literal("DENY", "INSUFFICIENT_DATA"),
  /** Every reason's code once, and INSUFFICIENT_DATA when that is the decision. */
  codes: Schema.Array(Schema.String),
  reasons: Schema.Array(PolicyReason)
}).annotations({ identifier: "RejectedCandidate" })
export type RejectedCandidate = typeof RejectedCandidate.Type

export const RouteDecision = Schema.Struct({
  capability: Schema.String,
  optimizeFor: OptimizeFor,
  policy: AgentPolicy,
  selected: Schema.NullOr(RankedCandidate),
  fallbacks: Schema.Array(RankedCandidate),
  rejected: Schema.Array(RejectedCandidate),
  message: Schema.String,
  /** Present when `limit` cut the lists: how many fallbacks and rejections were left out (the message counts all). */
  omitted: Schema.optional(Schema.Struct({ fallbacks: Schema.Int, rejected: Schema.Int })),
  metricsSnapshotAt: Schema.String,
  decidedAt: Schema.String
}).annotations({ identifier: "RouteDecision" })
export type RouteDecision = typeof RouteDecision.Type
