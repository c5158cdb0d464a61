import type { SqlClient, Statement } from "@effect/sql"
import { Effect, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { McpTool } from "../domain/mcp.js"
import { HttpMethod, type ResourcePaymentOption, type ResourceRecord, ServiceStatus } from "../domain/resources.js"
import { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { decodeRows, SqlFlag, SqlNumber } from "./repository.js"

/**
 * The resource rows as the store keeps them (resources, providers, capabilities, payment options)
 * and how a set of them becomes full records: shared by the repositories over those tables. No I/O
 * of its own; `recordsLoader` runs the queries it is given a client for.
 */

/** Listed resources: what buyers see. */
export const LISTED_ONLY = "r.listed = 1"

/**
 * What the probe schedule visits: listed resources, unlisted ones a healthy probe may list
 * (imported, ingested, delisted as unhealthy), and everything the config file names.
 */
export const PROBE_TARGET_RULE =
  "(r.listed = 1 OR r.listing_hold IN ('awaiting_probe', 'unhealthy') OR r.source = 'config')"

export const ResourceRow = Schema.Struct({
  id: ResourceId,
  provider_id: Schema.String,
  provider_name: Schema.String,
  provider_url: Schema.NullOr(Schema.String),
  provider_contact: Schema.NullOr(Schema.String),
  type: Schema.Literal("http", "mcp"),
  name: Schema.String,
  description: Schema.String,
  url: Schema.String,
  method: HttpMethod,
  status: ServiceStatus,
  verification_level: SqlNumber,
  listed: SqlFlag,
  source: Schema.String,
  trusted: SqlFlag,
  service_name: Schema.NullOr(Schema.String),
  tags: Schema.NullOr(Schema.parseJson(Schema.Array(Schema.String))),
  icon_url: Schema.NullOr(Schema.String),
  mcp_tool: Schema.NullOr(Schema.parseJson(McpTool))
})

const CapabilityRow = Schema.Struct({ resource_id: ResourceId, capability: Schema.String })

const OptionRow = Schema.Struct({
  resource_id: ResourceId,
  network: StellarNetwork,
  scheme: PaymentScheme,
  asset: Schema.String,
  amount: Schema.String,
  amount_usd: SqlNumber,
  max_amount: Schema.NullOr(Schema.String),
  max_amount_usd: Schema.NullOr(SqlNumber),
  pay_to: Schema.String
})

export const toOption = (row: Omit<typeof OptionRow.Type, "resource_id">): ResourcePaymentOption => ({
  network: row.network,
  scheme: row.scheme,
  asset: row.asset,
  amount: row.amount,
  amountUsd: row.amount_usd,
  ...(row.max_amount !== null ? { maxAmount: row.max_amount } : {}),
  ...(row.max_amount_usd !== null ? { maxAmountUsd: row.max_amount_usd } : {}),
  payTo: row.pay_to
})

export const decodeResources = decodeRows(ResourceRow)
const encodeMcpToolJson = Schema.encodeSync(Schema.parseJson(McpTool))
/** `resource.mcp` as stored; one built before kinds existed (no `kind`) is a tool, as decoding it would say. */
export const encodeMcpTool = (mcp: Omit<McpTool, "kind"> & { readonly kind?: McpTool["kind"] | undefined }) =>
  encodeMcpToolJson({ ...mcp, kind: mcp.kind ?? "tool" })
export const decodeCapabilities = decodeRows(CapabilityRow)
export const decodeOptions = decodeRows(OptionRow)

export const toRecord = (
  r: typeof ResourceRow.Type,
  capabilities: ReadonlyArray<string>,
  options: ReadonlyArray<ResourcePaymentOption>
): ResourceRecord => ({
  resource: {
    id: r.id,
    type: r.type,
    name: r.name,
    description: r.description,
    url: r.url,
    method: r.method,
    ...(r.mcp_tool !== null ? { mcp: r.mcp_tool } : {}),
    capabilities,
    status: r.status,
    verificationLevel: r.verification_level,
    ...(r.service_name !== null ? { serviceName: r.service_name } : {}),
    ...(r.tags !== null ? { tags: r.tags } : {}),
    ...(r.icon_url !== null ? { iconUrl: r.icon_url } : {})
  },
  provider: {
    id: r.provider_id,
    name: r.provider_name,
    ...(r.provider_url !== null ? { url: r.provider_url } : {}),
    ...(r.provider_contact !== null ? { contact: r.provider_contact } : {})
  },
  paymentOptions: options,
  listing: { listed: r.listed, source: r.source, trusted: r.trusted }
})

export const groupBy = <A>(rows: ReadonlyArray<A>, key: (a: A) => string) => {
  const map = new Map<string, Array<A>>()
  for (const row of rows) {
    const k = key(row)
    const list = map.get(k)
    if (list) list.push(row)
    else map.set(k, [row])
  }
  return map
}

/** Loads full records for the resource rows selected by `where` (a SQL fragment over `r`), by id, optionally one page. */
export const recordsLoader =
  (sql: SqlClient.SqlClient) =>
  (where: Statement.Fragment, page?: { readonly offset?: number; readonly limit: number }) =>
    Effect.gen(function* () {
      const rows = yield* sql`
      SELECT r.id, r.provider_id, p.name AS provider_name, p.url AS provider_url, p.contact AS provider_contact,
             r.type, r.name, r.description, r.url, r.method, r.status, r.verification_level, r.listed, r.source, r.trusted,
             r.service_name, r.tags, r.icon_url, r.mcp_tool
      FROM resources r JOIN providers p ON p.id = r.provider_id
      WHERE ${where}
      ORDER BY r.id ${page ? sql`LIMIT ${page.limit} OFFSET ${page.offset ?? 0}` : sql``}`.pipe(
        Effect.flatMap(decodeResources)
      )
      if (rows.length === 0) return [] as Array<ResourceRecord>
      const ids = rows.map((r) => r.id)
      const caps = yield* sql`
      SELECT resource_id, capability FROM resource_capabilities WHERE ${sql.in("resource_id", ids)} ORDER BY capability`.pipe(
        Effect.flatMap(decodeCapabilities)
      )
      const options = yield* sql`
      SELECT * FROM payment_options WHERE ${sql.in("resource_id", ids)} ORDER BY resource_id, option_index`.pipe(
        Effect.flatMap(decodeOptions)
      )
      const capsBy = groupBy(caps, (c) => c.resource_id)
      const optionsBy = groupBy(options, (o) => o.resource_id)
      return rows.map((r) =>
        toRecord(
          r,
          (capsBy.get(r.id) ?? []).map((c) => c.capability),
          (optionsBy.get(r.id) ?? []).map(toOption)
        )
      )
    })
