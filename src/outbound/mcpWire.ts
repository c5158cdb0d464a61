import { isObject } from "../domain/isObject.js"

/**
 * What an MCP client of this service (probes, registration, the buyer's paid tool call) lets
 * through its transport, as plain rules over the JSON-RPC text. The SDK client answers every
 * server-to-client request itself (a `ping` gets a POST), and reads a JSON batch as that many
 * messages: a server answering one `tools/call` with 1,250 pings made it send 1,250 requests. So
 * a request goes out only when it is one this client decided to send, and an answer comes in only
 * as the one response to that request: server requests, notifications and batches never reach
 * the SDK.
 */

/**
 * The messages these clients send: `server/discover` (which generation a server speaks), the
 * 2025 handshake, the reads they make of a tool, resource or prompt and their lists, and the
 * SDK's cancellation of a call that timed out.
 */
const CLIENT_METHODS = new Set([
  "server/discover",
  "initialize",
  "notifications/initialized",
  "tools/call",
  "tools/list",
  "resources/read",
  "resources/list",
  "prompts/get",
  "prompts/list",
  "notifications/cancelled"
])

type JsonRpcId = string | number

const isId = (value: unknown): value is JsonRpcId => typeof value === "string" || typeof value === "number"

/** An outgoing message: a request (with its id) or a notification; or why it is not sent. */
export type Outgoing = { readonly method: string; readonly id: JsonRpcId | null } | { readonly refused: string }

/** Whether the SDK may send `body`: one request or notification of CLIENT_METHODS, never a response or a batch. */
export const outgoing = (body: unknown): Outgoing => {
  let message: unknown
  try {
    message = typeof body === "string" ? JSON.parse(body) : undefined
  } catch {
    return { refused: "the client tried to send a body that is not JSON" }
  }
  if (!isObject(message)) return { refused: "the client sends one message at a time, never a batch" }
  if (typeof message.method !== "string") return { refused: "the client answers no server request" }
  if (!CLIENT_METHODS.has(message.method)) return { refused: `the client does not send ${message.method.slice(0, 60)}` }
  return { method: message.method, id: isId(message.id) ? message.id : null }
}

/** The JSON texts of an event stream's `message` events (`data:` lines joined), in order. */
export const sseMessages = (text: string): ReadonlyArray<string> =>
  text.split(/\r?\n\r?\n/).flatMap((block) => {
    let event = "message"
    const data: Array<string> = []
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim()
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""))
    }
    return event === "message" && data.length > 0 ? [data.join("\n")] : []
  })

/** The one response to a request, as JSON text; or why the answer is refused. `dropped` counts what was left out. */
export type Incoming = { readonly response: string; readonly dropped: number } | { readonly refused: string }

/**
 * The response to request `id` in an answer (a JSON body or an event stream): a batch is refused
 * outright; server requests, notifications and responses to other ids are dropped; an answer with
 * no response to `id` is refused, so the call fails now rather than waiting for its timeout.
 */
export const incoming = (id: JsonRpcId, contentType: string | null, text: string): Incoming => {
  const stream = (contentType ?? "").toLowerCase().startsWith("text/event-stream")
  const texts = stream ? sseMessages(text) : [text]
  let response: string | null = null
  let dropped = 0
  for (const each of texts) {
    let message: unknown
    try {
      message = JSON.parse(each)
    } catch {
      dropped++
      continue
    }
    if (Array.isArray(message)) return { refused: "the server answered a single request with a JSON-RPC batch" }
    const isResponse =
      isObject(message) && !("method" in message) && message.id === id && ("result" in message || "error" in message)
    if (isResponse && response === null) response = JSON.stringify(message)
    else dropped++
  }
  return response === null ? { refused: "the server's answer holds no response to the request" } : { response, dropped }
}

/**
 * Requests one MCP client may still send: granted as it decides to make calls, taken by each
 * request that leaves. Exhausted, the transport refuses to send, so a bug or a server trick that
 * makes the SDK send more fails the call instead of reaching the server.
 */
export class RequestBudget {
  private left: number
  constructor(initial: number) {
    this.left = initial
  }
  grant(requests: number) {
    this.left += requests
  }
  take(): boolean {
    if (this.left <= 0) return false
    this.left--
    return true
  }
}

/** The handshake of a new session: `initialize` and `notifications/initialized`. */
export const HANDSHAKE_REQUESTS = 2
/** One call: the request, and the cancellation the SDK sends when it times out. */
export const CALL_REQUESTS = 2
/** One stateless (2026-07-28) request: nothing precedes or cancels it. */
export const STATELESS_REQUESTS = 1
