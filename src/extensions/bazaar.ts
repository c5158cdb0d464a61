import { createHash } from "node:crypto"
import { Either, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { isObject } from "../domain/isObject.js"
import { readMcpTool } from "../domain/mcp.js"
import type { CatalogEntry, HttpMethod } from "../domain/resources.js"
import { ceilingCoversAmount, ResourcePaymentOption } from "../domain/resources.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import type { SupportedAsset } from "../domain/x402.js"
import { schemaRefusal } from "./schemaGuard.js"

/**
 * The x402 `bazaar` extension (specs/extensions/bazaar.md in the x402 repository) as a facilitator
 * reads it: `paymentPayload.extensions.bazaar = {info, schema}`, where `schema` (JSON Schema
 * Draft 2020-12) must validate `info` before anything is catalogued. Everything here is pure.
 */
export const BAZAAR = "bazaar"

/** What the `EXTENSION-RESPONSES` header says about the bazaar extension. */
export type BazaarStatus =
  | { readonly status: "success" }
  | { readonly status: "processing" }
  | { readonly status: "rejected"; readonly rejectedReason: string }

export const rejected = (rejectedReason: string): BazaarStatus => ({ status: "rejected", rejectedReason })

/** `EXTENSION-RESPONSES`: base64 of the JSON object keyed by extension name. */
export const extensionResponsesHeader = (bazaar: BazaarStatus) =>
  Buffer.from(JSON.stringify({ [BAZAAR]: bazaar }), "utf8").toString("base64")

/**
 * A settle answer with the bazaar status added to its `extensionResponses` field, where 2.27 types
 * it on settle answers; the answer as it was when the request carried no bazaar extension.
 */
export const withBazaarStatus = <A extends { readonly extensionResponses?: unknown }>(
  answer: A,
  status: BazaarStatus | null
): A =>
  status === null
    ? answer
    : {
        ...answer,
        extensionResponses: {
          ...(isObject(answer.extensionResponses) ? answer.extensionResponses : {}),
          [BAZAAR]: status
        }
      }

/**
 * Why the bazaar extension's schema in a verify or settle payload is not evaluated (schemaGuard's
 * allow-list and bounds), or null when it may be or there is none. Checked before the payment, so
 * a request carrying a schema this service would never run is refused outright.
 */
export const bazaarSchemaRefusal = (paymentPayload: unknown): string | null => {
  const extension =
    isObject(paymentPayload) && isObject(paymentPayload.extensions) ? paymentPayload.extensions[BAZAAR] : undefined
  if (!isObject(extension) || extension.schema === undefined) return null
  const refused = schemaRefusal(extension.schema, extension.info)
  return refused === null ? null : `paymentPayload.extensions.bazaar.${refused}`
}

const HTTP_METHODS = new Set<string>(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
const text = (value: unknown, max: number) => (typeof value === "string" ? value.slice(0, max) : undefined)

/**
 * Catalog id of an ingested resource: its URL (and MCP tool, which shares the server URL) and the
 * payee, hashed. A second seller of one URL is a second entry, never a rewrite of the first.
 */
export const bazaarId = (url: string, payTo: string, tool?: string) =>
  ResourceId.make(
    `bazaar-${createHash("sha256")
      .update(JSON.stringify([url, payTo, tool ?? null]))
      .digest("hex")
      .slice(0, 16)}`
  )

/** Whether a payment carries the bazaar extension at all; nothing of it is read. */
export const hasBazaar = (paymentPayload: unknown): boolean =>
  isObject(paymentPayload) && isObject(paymentPayload.extensions) && paymentPayload.extensions[BAZAAR] !== undefined

/**
 * What a payment's bazaar extension asks for: nothing, a refusal with its reason, or an entry to
 * catalog once `info` is validated against `schema` (off the request thread: SchemaValidator).
 */
export type BazaarReading =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Rejected"; readonly reason: string }
  | { readonly _tag: "Accepted"; readonly entry: CatalogEntry; readonly info: unknown; readonly schema: unknown }

const decodeOption = Schema.decodeUnknownEither(ResourcePaymentOption)

/**
 * Reads and validates the bazaar extension of a settle body (after the settle succeeded) and builds the catalog
 * entry: the URL from `paymentPayload.resource.url`, the payment option from the requirements
 * being paid (only this deployment's network and asset), type, method, description and, for an
 * MCP tool, its `toolName`, `transport`, `inputSchema` and `example` from `info`, the service
 * metadata (`serviceName`, `tags`, `iconUrl`) from `resource` as upstream sanitises it, the name
 * from `serviceName` when it survives.
 */
export const readBazaar = (
  request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown },
  asset: SupportedAsset
): BazaarReading => {
  const payload = request.paymentPayload
  const extension = isObject(payload) && isObject(payload.extensions) ? payload.extensions[BAZAAR] : undefined
  if (extension === undefined) return { _tag: "Absent" }
  const reject = (reason: string): BazaarReading => ({ _tag: "Rejected", reason })
  if (!isObject(extension) || !isObject(extension.info) || extension.schema === undefined)
    return reject("expected {info, schema}")
  const refused = schemaRefusal(extension.schema, extension.info)
  if (refused !== null) return reject(refused)

  const resource = isObject(payload) && isObject(payload.resource) ? payload.resource : {}
  const url = typeof resource.url === "string" ? resource.url : ""
  if (!/^https?:\/\/[^\s]+$/.test(url) || url.length > 2048)
    return reject("paymentPayload.resource.url must be an absolute http(s) URL")
  const input = isObject(extension.info.input) ? extension.info.input : {}
  const type = input.type === "mcp" ? "mcp" : input.type === "http" ? "http" : null
  if (type === null) return reject('info.input.type must be "http" or "mcp"')
  const mcp = type === "mcp" ? readMcpTool(input) : undefined
  if (mcp !== undefined && Either.isLeft(mcp)) return reject(`info.input: ${mcp.left}`)
  const tool = mcp?.right
  const method: HttpMethod =
    type === "http" && typeof input.method === "string" && HTTP_METHODS.has(input.method)
      ? (input.method as HttpMethod)
      : type === "mcp"
        ? "POST"
        : "GET"

  const requirements = isObject(request.paymentRequirements) ? request.paymentRequirements : {}
  if (requirements.network !== asset.network || requirements.asset !== asset.assetContract) {
    return reject(
      `only resources paid on ${asset.network} in ${asset.symbol} (${asset.assetContract}) are catalogued here`
    )
  }
  const amount = typeof requirements.amount === "string" ? requirements.amount : ""
  const option = decodeOption({
    network: requirements.network,
    scheme: requirements.scheme,
    asset: requirements.asset,
    amount,
    amountUsd: Number(amount) / 10 ** asset.decimals,
    ...(typeof requirements.maxAmount === "string"
      ? { maxAmount: requirements.maxAmount, maxAmountUsd: Number(requirements.maxAmount) / 10 ** asset.decimals }
      : {}),
    payTo: requirements.payTo
  })
  if (Either.isLeft(option)) return reject("the payment requirements are not a payment option this service can catalog")
  if (!ceilingCoversAmount(option.right)) return reject("the payment requirements' maxAmount is below their amount")

  const host = new URL(url).host
  const metadata = serviceMetadataOf({
    url,
    serviceName: resource.serviceName,
    tags: resource.tags,
    iconUrl: resource.iconUrl
  })
  const name = metadata.serviceName
  return {
    _tag: "Accepted",
    entry: {
      resource: {
        id: bazaarId(url, option.right.payTo, tool?.toolName),
        type,
        name: name ?? tool?.toolName ?? `${host}${new URL(url).pathname}`.slice(0, 200),
        description: text(resource.description, 1000) ?? text(input.description, 1000) ?? "",
        url,
        method,
        ...(tool !== undefined ? { mcp: tool } : {}),
        capabilities: [],
        ...metadata
      },
      provider: { id: `bazaar:${host}`, name: name ?? host, url: new URL(url).origin },
      paymentOptions: [option.right]
    },
    info: extension.info,
    schema: extension.schema
  }
}
