import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { McpTool } from "./mcp.js"
import { Cursor, PAGE_LIMITS } from "./pagination.js"
import { SearchQueryText } from "./searchText.js"
import { BaseUnits, Capability, PaymentScheme, StellarAddress, StellarNetwork } from "./stellar.js"

export const ServiceStatus = Schema.Literal(
  "DISCOVERED",
  "VALIDATING",
  "LIVE",
  "PAYMENT_VERIFIED",
  "TRANSACTION_VERIFIED",
  "CONTINUOUSLY_VERIFIED",
  "DEGRADED",
  "OFFLINE",
  "QUARANTINED"
).annotations({ identifier: "ServiceStatus" })
export type ServiceStatus = typeof ServiceStatus.Type

export const VerificationLevel = Schema.Int.pipe(Schema.between(0, 4)).annotations({
  identifier: "VerificationLevel"
})

export const ResourceType = Schema.Literal("http", "mcp")

export const HttpMethod = Schema.Literal("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")
export type HttpMethod = typeof HttpMethod.Type

const UsdAmount = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())

export const ResourcePaymentOption = Schema.Struct({
  network: StellarNetwork,
  scheme: PaymentScheme,
  asset: Schema.String.pipe(Schema.minLength(1)),
  amount: BaseUnits,
  amountUsd: UsdAmount,
  maxAmount: Schema.optional(BaseUnits),
  maxAmountUsd: Schema.optional(UsdAmount),
  payTo: StellarAddress
}).annotations({ identifier: "ResourcePaymentOption" })
export type ResourcePaymentOption = typeof ResourcePaymentOption.Type

/** An `upto` ceiling is never below the amount: true when there is no ceiling or it covers the amount. */
export const ceilingCoversAmount = (option: Pick<ResourcePaymentOption, "amount" | "maxAmount">): boolean =>
  option.maxAmount === undefined || BigInt(option.maxAmount) >= BigInt(option.amount)

export const Provider = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  name: Schema.String,
  url: Schema.optional(Schema.String),
  contact: Schema.optional(Schema.String)
}).annotations({ identifier: "Provider" })
export type Provider = typeof Provider.Type

export const ResourceInfo = Schema.Struct({
  id: ResourceId.pipe(Schema.minLength(1), Schema.maxLength(200)),
  type: ResourceType,
  name: Schema.String,
  description: Schema.String,
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\/[^\s]+$/, { message: () => "expected an http(s) URL" })),
  /** HTTP method a probe uses; not in the spec's table, added because POST-only resources exist. */
  method: Schema.optionalWith(HttpMethod, { default: () => "GET" }),
  /** For type `mcp`: the tool of the server at `url` that is sold (the Bazaar's MCP fields). */
  mcp: Schema.optional(McpTool),
  capabilities: Schema.Array(Capability),
  status: ServiceStatus,
  verificationLevel: VerificationLevel,
  /**
   * The bazaar's service metadata. Stored only as upstream's `sanitizeResourceServiceMetadata`
   * leaves it (`serviceMetadata.ts`): an invalid value is dropped at ingestion, not refused.
   */
  serviceName: Schema.optional(Schema.String),
  /** Short topical tags; searchable, ranked as capabilities are. */
  tags: Schema.optional(Schema.Array(Schema.String)),
  /** An absolute http(s) URL of the service's icon; never fetched by Sextant. */
  iconUrl: Schema.optional(Schema.String)
}).annotations({ identifier: "Resource" })

/**
 * Where a resource came from and whether it is listed. Only listed resources appear in discovery,
 * search and routes and count as payee evidence; an unlisted one keeps its observations.
 * Sources: "config" (the catalog file), "validate" (a URL probed through /v1/validate), and the
 * ingestion paths of later issues ("bazaar", "registration", "import:<source id>").
 */
export const Listing = Schema.Struct({
  listed: Schema.Boolean,
  source: Schema.String,
  /**
   * The catalog file names it or an operator listed it (docs/trust.md): only a trusted entry's
   * automatic quarantine refuses its payee, and it is probed in a lane of its own.
   */
  trusted: Schema.Boolean
}).annotations({ identifier: "Listing" })
export type Listing = typeof Listing.Type

/**
 * Why an unlisted resource is unlisted (null while listed). A healthy probe lists the first two;
 * only an operator or the source lists the others again. See docs/decisions.md, Listing and freshness.
 */
export const ListingHold = Schema.Literal("awaiting_probe", "unhealthy", "source", "operator", "validate")
export type ListingHold = typeof ListingHold.Type

/** Holds a healthy probe lifts. */
export const probeMayList = (hold: ListingHold | null): boolean => hold === "awaiting_probe" || hold === "unhealthy"

/** The source of imported resources: `import:<catalogSources id>`. */
export const importSource = (sourceId: string) => `import:${sourceId}`

/**
 * Sources whose resources start unlisted until a healthy probe: a source cannot list what does not
 * answer a 402. The config file lists what it names; `/v1/validate` never lists.
 */
export const awaitsProbe = (source: string): boolean => source === "bazaar" || source.startsWith("import:")

export const ResourceRecord = Schema.Struct({
  resource: ResourceInfo,
  provider: Provider,
  paymentOptions: Schema.Array(ResourcePaymentOption),
  listing: Listing
}).annotations({ identifier: "ResourceRecord" })
export type ResourceRecord = typeof ResourceRecord.Type

/**
 * A catalog entry as an operator writes it: a ResourceRecord whose status and level may be left
 * out. Levels are earned from evidence, so any declared value is ignored at load.
 */
export const CatalogEntry = Schema.Struct({
  resource: Schema.Struct({
    ...ResourceInfo.fields,
    status: Schema.optional(ServiceStatus),
    verificationLevel: Schema.optional(VerificationLevel)
  }),
  provider: Provider,
  paymentOptions: Schema.Array(ResourcePaymentOption)
}).annotations({ identifier: "CatalogEntry" })
export type CatalogEntry = typeof CatalogEntry.Type

/** Worst-case spend of one option: the authorised ceiling for `upto`, the fixed price otherwise. */
export const worstCaseUsd = (option: ResourcePaymentOption): number =>
  option.scheme === "upto" ? (option.maxAmountUsd ?? option.amountUsd) : option.amountUsd

export const ResourceSearchRequest = Schema.Struct({
  query: Schema.optional(SearchQueryText),
  capability: Schema.optional(Capability),
  scheme: Schema.optional(PaymentScheme),
  network: Schema.optional(StellarNetwork),
  asset: Schema.optional(Schema.String),
  maxPriceUsd: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  minimumReliability: Schema.optional(Schema.Number.pipe(Schema.between(0, 1))),
  maximumP95LatencyMs: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
  /** Hits per page (default 50). */
  limit: Schema.optional(Schema.Int.pipe(Schema.between(1, PAGE_LIMITS.search.max))),
  /** `nextCursor` of the previous page, with the same filters. */
  cursor: Schema.optional(Cursor)
}).annotations({ identifier: "ResourceSearchRequest" })
export type ResourceSearchRequest = typeof ResourceSearchRequest.Type
