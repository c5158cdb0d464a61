import Ajv2020 from "ajv/dist/2020.js"
import addFormats from "ajv-formats"
import { Either, Schema } from "effect"
import { createHash } from "node:crypto"
import type { CatalogEntry, HttpMethod } from "../domain/resources.js"
import { ResourcePaymentOption } from "../domain/resources.js"
import type { SupportedAsset } from "../domain/x402.js"

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
 * Bounds on what a payer may make this service validate. The schema is untrusted code for a
 * validator: its size bounds compile time and the instance's size bounds validation time
 * (`uniqueItems` is quadratic), and regular-expression keywords are refused outright, since a
 * JavaScript regex cannot be interrupted once a catastrophic backtrack starts (Ajv's own advice
 * for untrusted schemas).
 */
export const MAX_SCHEMA_BYTES = 16 * 1024
export const MAX_INFO_BYTES = 16 * 1024
const REGEX_KEYWORDS = new Set(["pattern", "patternProperties"])
/** Keywords whose value is one subschema, a list of them, or a name-to-subschema map. */
const ONE = new Set(["items", "not", "if", "then", "else", "contains", "additionalProperties", "unevaluatedItems", "unevaluatedProperties", "propertyNames", "additionalItems", "contentSchema"])
const MANY = new Set(["allOf", "anyOf", "oneOf", "prefixItems"])
const BY_NAME = new Set(["properties", "$defs", "definitions", "dependentSchemas"])

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** The first thing in a schema this service refuses to evaluate, or null. Only keyword positions are read, so a property named "pattern" is fine. */
const refusedKeyword = (schema: unknown, path: string): string | null => {
  if (!isObject(schema)) return null
  for (const [key, value] of Object.entries(schema)) {
    const at = `${path}/${key}`
    if (REGEX_KEYWORDS.has(key)) return `${at}: regular-expression keywords are not evaluated for untrusted schemas`
    if ((key === "$ref" || key === "$dynamicRef") && (typeof value !== "string" || !value.startsWith("#"))) {
      return `${at}: only local references (#...) are resolved; remote schemas are never fetched`
    }
    const nested = ONE.has(key)
      ? [[at, value] as const]
      : MANY.has(key) && Array.isArray(value)
        ? value.map((v, i) => [`${at}/${i}`, v] as const)
        : BY_NAME.has(key) && isObject(value)
          ? Object.entries(value).map(([name, v]) => [`${at}/${name}`, v] as const)
          : []
    for (const [p, v] of nested) {
      const found = refusedKeyword(v, p)
      if (found !== null) return found
    }
  }
  return null
}

/**
 * Validates `info` against `schema` with Ajv (Draft 2020-12): a fresh instance per call, so no
 * schema `$id` of one payer lingers for the next; strict (an unknown keyword is an error, not
 * ignored); no `loadSchema`, so a remote reference fails to compile instead of being fetched.
 */
export const validateInfo = (info: unknown, schema: unknown): Either.Either<void, string> => {
  if (!isObject(schema) && typeof schema !== "boolean") return Either.left("schema must be a JSON Schema object")
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) return Either.left(`schema is larger than ${MAX_SCHEMA_BYTES} bytes`)
  if (JSON.stringify(info).length > MAX_INFO_BYTES) return Either.left(`info is larger than ${MAX_INFO_BYTES} bytes`)
  const refused = refusedKeyword(schema, "schema")
  if (refused !== null) return Either.left(refused)
  try {
    const ajv = new Ajv2020({
      strict: true,
      strictTypes: false,
      strictTuples: false,
      strictRequired: false,
      allErrors: false,
      logger: false,
      addUsedSchema: false
    })
    addFormats(ajv, { mode: "fast" })
    const validate = ajv.compile(schema)
    if (validate(info)) return Either.right(undefined)
    const first = validate.errors?.[0]
    return Either.left(`info failed schema validation: ${first ? `${first.instancePath || "(root)"} ${first.message ?? "is invalid"}` : "invalid"}`)
  } catch (error) {
    return Either.left(`schema could not be compiled: ${error instanceof Error ? error.message : String(error)}`)
  }
}

const HTTP_METHODS = new Set<string>(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
/** Printable ASCII up to 32 characters, as the extension's serviceName rule says; otherwise dropped. */
const serviceName = (value: unknown) => (typeof value === "string" && /^[\x20-\x7e]{1,32}$/.test(value) ? value.trim() : undefined)
const text = (value: unknown, max: number) => (typeof value === "string" ? value.slice(0, max) : undefined)

/**
 * Catalog id of an ingested resource: its URL (and MCP tool, which shares the server URL) and the
 * payee, hashed. A second seller of one URL is a second entry, never a rewrite of the first.
 */
export const bazaarId = (url: string, payTo: string, tool?: string) =>
  `bazaar-${createHash("sha256").update(JSON.stringify([url, payTo, tool ?? null])).digest("hex").slice(0, 16)}`

/** Whether a payment carries the bazaar extension at all; nothing of it is read. */
export const hasBazaar = (paymentPayload: unknown): boolean =>
  isObject(paymentPayload) && isObject(paymentPayload.extensions) && paymentPayload.extensions[BAZAAR] !== undefined

/** What a payment's bazaar extension asks for: nothing, a refusal with its reason, or an entry to catalog. */
export type BazaarReading =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "Rejected"; readonly reason: string }
  | { readonly _tag: "Accepted"; readonly entry: CatalogEntry }

const decodeOption = Schema.decodeUnknownEither(ResourcePaymentOption)

/**
 * Reads and validates the bazaar extension of a settle body (after the settle succeeded) and builds the catalog
 * entry: the URL from `paymentPayload.resource.url`, the payment option from the requirements
 * being paid (only this deployment's network and asset), type, method, tool and description
 * from `info`, the name from `resource.serviceName` when it passes the extension's rule.
 */
export const readBazaar = (
  request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown },
  asset: SupportedAsset
): BazaarReading => {
  const payload = request.paymentPayload
  const extension = isObject(payload) && isObject(payload.extensions) ? payload.extensions[BAZAAR] : undefined
  if (extension === undefined) return { _tag: "Absent" }
  const reject = (reason: string): BazaarReading => ({ _tag: "Rejected", reason })
  if (!isObject(extension) || !isObject(extension.info) || extension.schema === undefined) return reject("expected {info, schema}")
  const valid = validateInfo(extension.info, extension.schema)
  if (Either.isLeft(valid)) return reject(valid.left)

  const resource = isObject(payload) && isObject(payload.resource) ? payload.resource : {}
  const url = typeof resource.url === "string" ? resource.url : ""
  if (!/^https?:\/\/[^\s]+$/.test(url) || url.length > 2048) return reject("paymentPayload.resource.url must be an absolute http(s) URL")
  const input = isObject(extension.info.input) ? extension.info.input : {}
  const type = input.type === "mcp" ? "mcp" : input.type === "http" ? "http" : null
  if (type === null) return reject('info.input.type must be "http" or "mcp"')
  const tool = type === "mcp" ? text(input.tool, 200) : undefined
  if (type === "mcp" && tool === undefined) return reject("info.input.tool is required for an MCP tool")
  const method: HttpMethod = type === "http" && typeof input.method === "string" && HTTP_METHODS.has(input.method) ? (input.method as HttpMethod) : type === "mcp" ? "POST" : "GET"

  const requirements = isObject(request.paymentRequirements) ? request.paymentRequirements : {}
  if (requirements.network !== asset.network || requirements.asset !== asset.assetContract) {
    return reject(`only resources paid on ${asset.network} in ${asset.symbol} (${asset.assetContract}) are catalogued here`)
  }
  const amount = typeof requirements.amount === "string" ? requirements.amount : ""
  const option = decodeOption({
    network: requirements.network,
    scheme: requirements.scheme,
    asset: requirements.asset,
    amount,
    amountUsd: Number(amount) / 10 ** asset.decimals,
    ...(typeof requirements.maxAmount === "string" ? { maxAmount: requirements.maxAmount, maxAmountUsd: Number(requirements.maxAmount) / 10 ** asset.decimals } : {}),
    payTo: requirements.payTo
  })
  if (Either.isLeft(option)) return reject("the payment requirements are not a payment option this service can catalog")

  const host = new URL(url).host
  const name = serviceName(resource.serviceName)
  return {
    _tag: "Accepted",
    entry: {
      resource: {
        id: bazaarId(url, option.right.payTo, tool),
        type,
        name: name ?? tool ?? `${host}${new URL(url).pathname}`.slice(0, 200),
        description: text(resource.description, 1000) ?? text(input.description, 1000) ?? "",
        url,
        method,
        capabilities: []
      },
      provider: { id: `bazaar:${host}`, name: name ?? host, url: new URL(url).origin },
      paymentOptions: [option.right]
    }
  }
}
