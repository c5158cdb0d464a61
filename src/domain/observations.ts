import { Schema } from "effect"
import { ServiceStatus } from "./resources.js"

export const ProbeOutcome = Schema.Literal(
  "healthy",
  "unreachable",
  "timeout",
  "http_status",
  "no_challenge",
  "malformed_challenge",
  "no_acceptable_option",
  "refused_target"
).annotations({ identifier: "ProbeOutcome" })
export type ProbeOutcome = typeof ProbeOutcome.Type

export const Observation = Schema.Struct({
  id: Schema.String,
  resourceId: Schema.String,
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

export const StatusTransition = Schema.Struct({
  resourceId: Schema.String,
  from: ServiceStatus,
  to: ServiceStatus,
  fromLevel: Schema.Int,
  toLevel: Schema.Int,
  reason: Schema.String,
  at: Schema.String
}).annotations({ identifier: "StatusTransition" })
export type StatusTransition = typeof StatusTransition.Type
