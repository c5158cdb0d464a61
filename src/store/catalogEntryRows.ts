import { createHash } from "node:crypto"
import { awaitsProbe, type CatalogEntry, type ListingHold } from "../domain/resources.js"
import type { ServiceMetadata } from "../domain/serviceMetadata.js"
import { encodeMcpTool } from "./resourceRows.js"

/** How a catalog entry becomes rows: its fingerprint, its first hold, its metadata columns. No I/O. */

/** Why a new unlisted row from `source` is unlisted. */
export const initialHold = (source: string): ListingHold =>
  awaitsProbe(source) ? "awaiting_probe" : source === "validate" ? "validate" : "operator"

/** Rows per bulk statement: far below both drivers' bound-parameter limits at 15 columns. */
export const WRITE_CHUNK = 500

/** The last of each key, in first-seen order: what writing the items one after another would leave. */
export const lastBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Array<A> => [
  ...new Map(items.map((a) => [key(a), a])).values()
]
export const lastById = (entries: ReadonlyArray<CatalogEntry>) => lastBy(entries, (e) => e.resource.id)

/**
 * What the store keeps of an entry, fingerprinted: equal fingerprints mean nothing to write.
 * Capabilities as a set, since the store keeps them so. The MCP tool only when there is one, so
 * the fingerprints of http resources stored before it existed still match.
 */
export const fingerprint = ({ resource: r, provider: p, paymentOptions }: CatalogEntry): string =>
  createHash("sha256")
    .update(
      JSON.stringify([
        [
          r.id,
          r.type,
          r.name,
          r.description,
          r.url,
          r.method,
          [...new Set(r.capabilities)].sort(),
          ...(r.mcp ? [encodeMcpTool(r.mcp)] : [])
        ],
        [r.serviceName ?? null, r.tags ?? null, r.iconUrl ?? null],
        [p.id, p.name, p.url ?? null, p.contact ?? null],
        paymentOptions.map((o) => [
          o.network,
          o.scheme,
          o.asset,
          o.amount,
          o.amountUsd,
          o.maxAmount ?? null,
          o.maxAmountUsd ?? null,
          o.payTo
        ])
      ])
    )
    .digest("base64url")

/** The service metadata columns of migration 0030: null for each field the sanitiser dropped. */
const metadataColumns = (m: ServiceMetadata) => ({
  service_name: m.serviceName ?? null,
  tags: m.tags === undefined ? null : JSON.stringify(m.tags),
  icon_url: m.iconUrl ?? null
})

/** The `resources` row of a new or changed entry; status and level start at DISCOVERED / 0 (the upsert keeps an existing row's). */
export const resourceRow = (
  { resource, provider }: CatalogEntry,
  o: {
    readonly hash: string
    readonly source: string
    readonly listed: boolean
    readonly hold: ListingHold | null
    readonly actor: string
    readonly at: string
    readonly metadata: ServiceMetadata
  }
) => ({
  id: resource.id,
  provider_id: provider.id,
  type: resource.type,
  name: resource.name,
  description: resource.description,
  url: resource.url,
  method: resource.method,
  mcp_tool: resource.mcp === undefined ? null : encodeMcpTool(resource.mcp),
  status: "DISCOVERED",
  verification_level: 0,
  source: o.source,
  listed: o.listed ? 1 : 0,
  listing_hold: o.hold,
  trusted: o.source === "config" ? 1 : 0,
  origin: URL.canParse(resource.url) ? new URL(resource.url).origin : null,
  added_by: o.source === "config" ? null : o.actor,
  catalog_hash: o.hash,
  ...metadataColumns(o.metadata),
  created_at: o.at,
  updated_at: o.at
})

/** An entry's capability rows, each capability once. */
export const capabilityRows = ({ resource }: CatalogEntry) =>
  [...new Set(resource.capabilities)].map((capability) => ({ resource_id: resource.id, capability }))

/** An entry's payment option rows, in the entry's order. */
export const optionRows = (entry: CatalogEntry) =>
  entry.paymentOptions.map((o, index) => ({
    resource_id: entry.resource.id,
    option_index: index,
    network: o.network,
    scheme: o.scheme,
    asset: o.asset,
    amount: o.amount,
    amount_usd: o.amountUsd,
    max_amount: o.maxAmount ?? null,
    max_amount_usd: o.maxAmountUsd ?? null,
    pay_to: o.payTo
  }))
