import { Either, Schema } from "effect"
import { isObject } from "../domain/isObject.js"
import { readMcpTool } from "../domain/mcp.js"
import {
  type CatalogEntry,
  ceilingCoversAmount,
  HttpMethod,
  ResourceInfo,
  type ResourcePaymentOption
} from "../domain/resources.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import { BaseUnits, baseUnitsToUsd, PaymentScheme, StellarAddress, StellarNetwork } from "../domain/stellar.js"
import { discoveredId, discoveredToolId } from "../verification/discoveredEntry.js"

/**
 * Reading another discovery service's items (x402 v2 §8 and the CDP Bazaar's variant) into
 * catalog entries. Lenient where the services differ: `lastUpdated` as Unix seconds or an ISO
 * string, `metadata` absent or null, v1 requirements (`maxAmountRequired`). Strict where Sextant
 * is: only options on this deployment's network and asset, with a known scheme, a base-unit amount
 * and a Stellar payee, become payment options. No I/O.
 */

const Item = Schema.Struct({
  resource: Schema.String,
  type: Schema.optionalWith(Schema.String, { default: () => "http" }),
  accepts: Schema.Array(Schema.Unknown),
  lastUpdated: Schema.optional(Schema.NullOr(Schema.Union(Schema.Number, Schema.String))),
  metadata: Schema.optional(Schema.NullOr(Schema.Unknown)),
  description: Schema.optional(Schema.String)
})
type Item = typeof Item.Type

/** One page of `/discovery/resources`; `pagination` may be missing (then the page is the whole list). */
export const DiscoveryPage = Schema.Struct({
  items: Schema.Array(Schema.Unknown),
  pagination: Schema.optional(
    Schema.Struct({
      limit: Schema.optional(Schema.Number),
      offset: Schema.optional(Schema.Number),
      total: Schema.Number
    })
  )
})
export type DiscoveryPage = typeof DiscoveryPage.Type

export interface ImportDeployment {
  readonly network: string
  readonly assetContract: string
  readonly decimals: number
  /** The source's `networks`, when it narrows what is kept. */
  readonly networks: ReadonlyArray<string> | undefined
}

export type ItemReading =
  | { readonly _tag: "Kept"; readonly entry: CatalogEntry; readonly lastUpdatedMs: number | null }
  | { readonly _tag: "OtherNetwork" }
  | { readonly _tag: "Invalid"; readonly reason: string }

/** Unix seconds (or milliseconds, for services that send them) or an ISO string; null when neither. */
export const lastUpdatedMs = (value: number | string | null | undefined): number | null => {
  if (typeof value === "number") return Number.isFinite(value) ? (value > 1e12 ? value : value * 1000) : null
  if (typeof value === "string") {
    const ms = Date.parse(value)
    return Number.isNaN(ms) ? null : ms
  }
  return null
}

const isScheme = Schema.is(PaymentScheme)
const isNetwork = Schema.is(StellarNetwork)
const isBaseUnits = Schema.is(BaseUnits)
const isStellarAddress = Schema.is(StellarAddress)
const isMethod = Schema.is(HttpMethod)
const isUrlField = Schema.is(ResourceInfo.fields.url)
/** The catalog's URL rule, and a URL the WHATWG parser reads. */
const isResourceUrl = (value: string): boolean => isUrlField(value) && URL.canParse(value)

/**
 * Bounds on what one imported item may store: a source is another party, and its text ends up in
 * every listing, search index and status page. Longer names and descriptions are cut; a longer URL
 * makes the item invalid (a cut URL would be another resource).
 */
export const MAX_URL_LENGTH = 2048
export const MAX_NAME_LENGTH = 200
export const MAX_DESCRIPTION_LENGTH = 1000

const text = (value: unknown, max = MAX_NAME_LENGTH): string | null =>
  typeof value === "string" && value !== "" ? value.slice(0, max) : null

/** A requirement (v2 `amount`, v1 `maxAmountRequired`) as a catalog option, when this deployment can pay it. */
const optionOf = (raw: unknown, deployment: ImportDeployment): ResourcePaymentOption | null => {
  if (!isObject(raw)) return null
  const amount = raw.amount ?? raw.maxAmountRequired
  const { scheme, network, asset, payTo } = raw
  if (!isNetwork(network) || network !== deployment.network || asset !== deployment.assetContract) return null
  if (!isScheme(scheme) || !isBaseUnits(amount) || typeof payTo !== "string" || !isStellarAddress(payTo)) return null
  const usd = baseUnitsToUsd(amount, deployment.decimals)
  // x402 states an `upto` price as its ceiling; the catalog keeps the ceiling beside it.
  return scheme === "upto"
    ? { network, scheme, asset, amount, amountUsd: usd, maxAmount: amount, maxAmountUsd: usd, payTo }
    : { network, scheme, asset, amount, amountUsd: usd, payTo }
}

/** The method a probe should use, when the item says: v1 `outputSchema.input.method`, or the bazaar extension's `info.input.method`. */
const methodOf = (item: Item): HttpMethod => {
  const candidates: Array<unknown> = []
  for (const raw of item.accepts) {
    if (isObject(raw) && isObject(raw.outputSchema) && isObject(raw.outputSchema.input))
      candidates.push(raw.outputSchema.input.method)
  }
  const extensions = isObject(item) ? (item as Record<string, unknown>).extensions : undefined
  if (
    isObject(extensions) &&
    isObject(extensions.bazaar) &&
    isObject(extensions.bazaar.info) &&
    isObject(extensions.bazaar.info.input)
  ) {
    candidates.push(extensions.bazaar.info.input.method)
  }
  const method = candidates.map((m) => (typeof m === "string" ? m.toUpperCase() : m)).find(isMethod)
  return method ?? "GET"
}

const describe = (item: Item, sourceId: string): string => {
  const metadata = isObject(item.metadata) ? item.metadata : {}
  const fromAccepts = item.accepts
    .map((a) => (isObject(a) ? text(a.description, MAX_DESCRIPTION_LENGTH) : null))
    .find((d) => d !== null)
  return (
    text(item.description, MAX_DESCRIPTION_LENGTH) ??
    text(metadata.description, MAX_DESCRIPTION_LENGTH) ??
    fromAccepts ??
    `Imported from ${sourceId}`
  )
}

/**
 * Where an MCP item keeps its tool: the Bazaar's item fields (`toolName`, `transport`,
 * `inputSchema`, `example`), else its bazaar extension's `info.input`.
 */
const mcpFieldsOf = (raw: unknown): unknown => {
  if (!isObject(raw)) return {}
  if (raw.toolName !== undefined) return raw
  const bazaar = isObject(raw.extensions) ? raw.extensions.bazaar : undefined
  return isObject(bazaar) && isObject(bazaar.info) ? bazaar.info.input : {}
}

/** One item: a catalog entry, or why it is not one. */
export const readItem = (raw: unknown, sourceId: string, deployment: ImportDeployment): ItemReading => {
  const decoded = Schema.decodeUnknownEither(Item)(raw)
  if (Either.isLeft(decoded)) return { _tag: "Invalid", reason: "not a discovery item (resource, accepts)" }
  const item = decoded.right
  const allowed = deployment.networks === undefined || deployment.networks.includes(deployment.network)
  const options = allowed
    ? item.accepts
        .map((a) => optionOf(a, deployment))
        .filter((o) => o !== null)
        .filter(ceilingCoversAmount)
    : []
  if (options.length === 0) return { _tag: "OtherNetwork" }
  if (item.resource.length > MAX_URL_LENGTH)
    return { _tag: "Invalid", reason: `resource URL is longer than ${MAX_URL_LENGTH} characters` }
  if (!isResourceUrl(item.resource))
    return { _tag: "Invalid", reason: `resource is not an http(s) URL: ${item.resource.slice(0, 100)}` }
  if (item.type !== "http" && item.type !== "mcp")
    return { _tag: "Invalid", reason: `unknown resource type "${item.type}"` }
  const mcp = item.type === "mcp" ? readMcpTool(mcpFieldsOf(raw)) : undefined
  if (mcp !== undefined && Either.isLeft(mcp)) return { _tag: "Invalid", reason: mcp.left }
  const tool = mcp?.right
  const url = new URL(item.resource)
  const metadata = isObject(item.metadata) ? item.metadata : {}
  // A 2.27 bazaar item carries the service metadata beside `resource`; Item's decoding drops it.
  const service = isObject(raw)
    ? serviceMetadataOf({ url: url.href, serviceName: raw.serviceName, tags: raw.tags, iconUrl: raw.iconUrl })
    : {}
  return {
    _tag: "Kept",
    lastUpdatedMs: lastUpdatedMs(item.lastUpdated),
    entry: {
      resource: {
        id: tool === undefined ? discoveredId(url) : discoveredToolId(url, tool.toolName),
        type: item.type,
        name: text(metadata.name) ?? tool?.toolName ?? `${url.host}${url.pathname}`.slice(0, MAX_NAME_LENGTH),
        description: describe(item, sourceId),
        url: url.href,
        method: tool === undefined ? methodOf(item) : "POST",
        ...(tool !== undefined ? { mcp: tool } : {}),
        capabilities: [],
        ...service
      },
      provider: { id: `host:${url.host}`, name: text(metadata.provider) ?? url.host, url: url.origin },
      paymentOptions: options
    }
  }
}
