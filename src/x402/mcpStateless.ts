import { Data } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { isObject } from "../domain/isObject.js"
import { isTaggedAs } from "../domain/tagged.js"
import { X402_MCP_EXTENSION } from "./mcpAnswer.js"

/**
 * The MCP client side of the 2026-07-28 revision, as plain requests: no `initialize`, no
 * `Mcp-Session-Id`, nothing kept between requests. Every request carries the protocol version, the
 * client's identity and its capabilities (`org.x402/payment` among them, so a seller may ask for
 * payment) in `params._meta`, and the `Mcp-Method`/`Mcp-Name` headers. The requests leave through
 * the `fetch` the caller passes: the probes' guarded fetch (outbound guard, pinned connection,
 * answer cap, request budget, only the one response to the request read back).
 */

export const MODERN_PROTOCOL_VERSION = "2026-07-28"
export const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
export const CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
export const CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"

/** The protocol generation a server speaks, as `server/discover` told. */
export type McpGeneration = "2026-07-28" | "2025-11-25"

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>

export interface McpRequest {
  readonly method: string
  readonly params: Readonly<Record<string, unknown>>
}

/** A JSON-RPC error the server answered: its answer, not a failure to reach it. */
export class McpAnswerError extends Data.TaggedError("McpAnswerError")<{
  readonly code: number
  readonly message: string
}> {}

/** An HTTP refusal of a request (a status that is not 2xx), with the start of its text. */
export class McpHttpRefusal extends Data.TaggedError("McpHttpRefusal")<{
  readonly status: number
  readonly message: string
}> {}

/** The capabilities Sextant's MCP clients declare: the x402 extension, so a seller may ask `payment_required`. */
export const CLIENT_CAPABILITIES = { extensions: { [X402_MCP_EXTENSION]: {} } }

/**
 * The `_meta` a 2025-era request in a session carries: the client capabilities again, with no
 * protocol version claim (the request stays 2025-era). A server that reads the extension per
 * request, never from `initialize`, can then ask payment of a resource read or a prompt.
 */
export const sessionRequestMeta = (meta?: Readonly<Record<string, unknown>>): Record<string, unknown> => ({
  [CLIENT_CAPABILITIES_META]: CLIENT_CAPABILITIES,
  ...meta
})

/** The `_meta` every 2026-07-28 request carries. */
export const requestEnvelope = (clientName: string): Record<string, unknown> => ({
  [PROTOCOL_VERSION_META]: MODERN_PROTOCOL_VERSION,
  [CLIENT_INFO_META]: { name: clientName, version: pkg.version },
  [CLIENT_CAPABILITIES_META]: CLIENT_CAPABILITIES
})

/** What `Mcp-Name` carries: the tool's or prompt's name, the resource's URI; none when it is not a plain header value. */
export const mcpNameOf = (request: McpRequest): string | null => {
  const name = request.method === "resources/read" ? request.params.uri : request.params.name
  return typeof name === "string" && /^[\x20-\x7e]{1,512}$/.test(name) ? name : null
}

let lastId = 0

/**
 * One stateless request: its result, or McpAnswerError (the server answered a JSON-RPC error),
 * McpHttpRefusal (an HTTP refusal), or whatever the fetch threw (a refusal of the guard, a timeout).
 */
export const statelessRequest = async (
  fetch: FetchLike,
  url: string,
  request: McpRequest,
  clientName: string,
  signal?: AbortSignal
): Promise<Record<string, unknown>> => {
  const id = ++lastId
  const meta = isObject(request.params._meta) ? request.params._meta : {}
  const params = { ...request.params, _meta: { ...requestEnvelope(clientName), ...meta } }
  const name = mcpNameOf(request)
  const response = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": MODERN_PROTOCOL_VERSION,
      "mcp-method": request.method,
      ...(name === null ? {} : { "mcp-name": name })
    },
    body: JSON.stringify({ jsonrpc: "2.0", id, method: request.method, params }),
    ...(signal === undefined ? {} : { signal })
  })
  const text = await response.text()
  if (!response.ok)
    throw new McpHttpRefusal({
      status: response.status,
      message: `the server refused the request with HTTP ${response.status}: ${text.slice(0, 200)}`
    })
  // The guarded fetch hands back only the one response to `id`, as JSON text.
  const message: unknown = JSON.parse(text)
  if (isObject(message) && isObject(message.error)) {
    const code = typeof message.error.code === "number" ? message.error.code : 0
    throw new McpAnswerError({ code, message: String(message.error.message ?? "").slice(0, 200) })
  }
  if (!isObject(message) || !isObject(message.result)) throw new Error("the server's answer holds no result")
  return message.result
}

/** What `server/discover` told: the generation, and whether the server advertises the x402 extension. */
export type Discovered =
  | { readonly generation: "2026-07-28"; readonly paymentExtension: boolean }
  | { readonly generation: "2025-11-25"; readonly reason: string }

/** Which generation a `server/discover` answer (or its refusal) shows; null when it shows none (the request never got an answer). */
export const generationOf = (
  answer: { readonly result: Record<string, unknown> } | { readonly error: unknown }
): Discovered | null => {
  if ("error" in answer) {
    const error = answer.error
    // A 2025-era server refuses the method (a JSON-RPC error) or a request outside a session (an HTTP 4xx).
    if (isTaggedAs<McpAnswerError>(error, "McpAnswerError"))
      return { generation: "2025-11-25", reason: `server/discover answered an error: ${error.message}` }
    if (isTaggedAs<McpHttpRefusal>(error, "McpHttpRefusal") && error.status >= 400 && error.status < 500)
      return { generation: "2025-11-25", reason: error.message }
    return null
  }
  const versions = answer.result.supportedVersions
  if (!Array.isArray(versions) || !versions.includes(MODERN_PROTOCOL_VERSION)) {
    return { generation: "2025-11-25", reason: `server/discover offers no ${MODERN_PROTOCOL_VERSION}` }
  }
  const capabilities = isObject(answer.result.capabilities) ? answer.result.capabilities : {}
  const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {}
  return { generation: MODERN_PROTOCOL_VERSION, paymentExtension: X402_MCP_EXTENSION in extensions }
}

/** Asks `server/discover`: the generation the server speaks; fails as the request did when it got no answer. */
export const discover = async (
  fetch: FetchLike,
  url: string,
  clientName: string,
  signal?: AbortSignal
): Promise<Discovered> => {
  try {
    return generationOf({
      result: await statelessRequest(fetch, url, { method: "server/discover", params: {} }, clientName, signal)
    })!
  } catch (error) {
    const seen = generationOf({ error })
    if (seen === null) throw error
    return seen
  }
}
