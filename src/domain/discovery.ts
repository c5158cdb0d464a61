import { Schema } from "effect"
import { ServiceStatus, VerificationLevel } from "./resources.js"
import { PaymentRequirements } from "./x402.js"
import { JsonObject } from "./json.js"
import { McpTransport } from "./mcp.js"

/**
 * The x402 v2 discovery shapes (specification §8, "Discovery API"): what a stock client extended
 * with the bazaar client reads from `<facilitator>/discovery/resources`.
 */


/** Sextant's evidence about the resource, so a client can rank by it; the spec leaves `metadata` open. */
export const DiscoveryMetadata = Schema.Struct({
  resourceId: Schema.String,
  name: Schema.String,
  description: Schema.String,
  provider: Schema.String,
  status: ServiceStatus,
  verificationLevel: VerificationLevel,
  reliability: Schema.Number,
  p95LatencyMs: Schema.NullOr(Schema.Int),
  confidence: Schema.Number,
  lastVerified: Schema.NullOr(Schema.String)
}).annotations({ identifier: "DiscoveryMetadata" })

export const DiscoveryItem = Schema.Struct({
  resource: Schema.String,
  type: Schema.String,
  x402Version: Schema.Int,
  /** Stock x402 v2 PaymentRequirements. */
  accepts: Schema.Array(PaymentRequirements),
  /** Unix seconds (the specification's form). */
  lastUpdated: Schema.Int,
  metadata: DiscoveryMetadata,
  /** An `mcp` item's tool, as the Bazaar lists MCP items: the tool's name, transport, arguments' schema and example. */
  toolName: Schema.optional(Schema.String),
  transport: Schema.optional(McpTransport),
  inputSchema: Schema.optional(JsonObject),
  example: Schema.optional(JsonObject)
}).annotations({ identifier: "DiscoveryItem" })
export type DiscoveryItem = typeof DiscoveryItem.Type

export const DiscoveryPagination = Schema.Struct({
  limit: Schema.Int,
  offset: Schema.Int,
  total: Schema.Int
}).annotations({ identifier: "DiscoveryPagination" })

export const DiscoveryResponse = Schema.Struct({
  x402Version: Schema.Literal(2),
  items: Schema.Array(DiscoveryItem),
  pagination: DiscoveryPagination
}).annotations({ identifier: "DiscoveryResponse" })
export type DiscoveryResponse = typeof DiscoveryResponse.Type

/** Page size when `limit` is absent, and its ceiling (the spec suggests 20 and 100; a catalog reader wants fewer round trips). */
export const DISCOVERY_DEFAULT_LIMIT = 100
export const DISCOVERY_MAX_LIMIT = 1000

/** The listing's filters: `type` from the spec, `network`, `scheme` and `payTo` as the bazaar client sends them. */
export const DiscoveryQuery = Schema.Struct({
  type: Schema.optional(Schema.String),
  network: Schema.optional(Schema.String),
  scheme: Schema.optional(Schema.String),
  payTo: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, DISCOVERY_MAX_LIMIT))),
  offset: Schema.optional(Schema.Int.pipe(Schema.nonNegative()))
}).annotations({ identifier: "DiscoveryQuery" })
export type DiscoveryQuery = typeof DiscoveryQuery.Type
