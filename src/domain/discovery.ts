import { Schema } from "effect"
import { JsonObject } from "./json.js"
import { McpTransport } from "./mcp.js"
import { Cursor, PAGE_LIMITS } from "./pagination.js"
import { ServiceStatus, VerificationLevel } from "./resources.js"
import { SearchQueryText } from "./searchText.js"
import { PaymentRequirements } from "./x402.js"

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
  /** The bazaar's service metadata (x402 2.27 item fields), when the resource has it. */
  serviceName: Schema.optional(Schema.String),
  tags: Schema.optional(Schema.Array(Schema.String)),
  iconUrl: Schema.optional(Schema.String),
  metadata: DiscoveryMetadata,
  /** An `mcp` item's tool, as the Bazaar lists MCP items: the tool's name, transport, arguments' schema and example. */
  toolName: Schema.optional(Schema.String),
  transport: Schema.optional(McpTransport),
  inputSchema: Schema.optional(JsonObject),
  example: Schema.optional(JsonObject),
  /** Extension payloads, as the stock bazaar client reads them: an `mcp` item's tool is `extensions.bazaar.info.input`. */
  extensions: Schema.optional(JsonObject)
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
/** Search pages: the stock client names no default; the catalog search's own bounds. */
export const DISCOVERY_SEARCH_DEFAULT_LIMIT = PAGE_LIMITS.search.default
export const DISCOVERY_SEARCH_MAX_LIMIT = PAGE_LIMITS.search.max

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

/**
 * Bazaar search (x402 2.27, `GET <facilitator>/discovery/search`): the stock client's parameters.
 * `query` is ranked by the catalog's full-text index; the other filters are exact. `extensions`
 * names extension keys (comma-separated) a resource must have declared; the only one Sextant
 * records per resource is `bazaar` (resources catalogued from a payment's bazaar extension).
 */
export const DiscoverySearchQuery = Schema.Struct({
  query: SearchQueryText,
  type: Schema.optional(Schema.String),
  network: Schema.optional(Schema.String),
  scheme: Schema.optional(Schema.String),
  payTo: Schema.optional(Schema.String),
  extensions: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, DISCOVERY_SEARCH_MAX_LIMIT))),
  cursor: Schema.optional(Cursor)
}).annotations({ identifier: "DiscoverySearchQuery" })
export type DiscoverySearchQuery = typeof DiscoverySearchQuery.Type

/** The search answer as 2.27 types it: `resources` (where the listing says `items`), a cursor page, `partialResults`. */
export const DiscoverySearchResponse = Schema.Struct({
  x402Version: Schema.Literal(2),
  resources: Schema.Array(DiscoveryItem),
  /** True when more matches follow this page: read them with `pagination.cursor`. */
  partialResults: Schema.Boolean,
  pagination: Schema.Struct({ limit: Schema.Int, cursor: Schema.NullOr(Schema.String) })
}).annotations({ identifier: "DiscoverySearchResponse" })
export type DiscoverySearchResponse = typeof DiscoverySearchResponse.Type
