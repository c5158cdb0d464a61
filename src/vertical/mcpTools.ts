import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http"
import { Effect, Runtime } from "effect"
import { randomUUID } from "node:crypto"
import { toolJsonSchema } from "../mcp/jsonSchema.js"
import { PAYMENT_META, PAYMENT_RESPONSE_META, X402_MCP_EXTENSION } from "../verification/mcpAnswer.js"
import { AssetBody, EligibilityBody } from "./assetRef.js"
import type { VerticalError } from "./errors.js"
import { type Endpoint, Paywall } from "./Paywall.js"
import type { IntelSettings } from "./queries.js"
import type { StellarData } from "./StellarData.js"

/** Where a vertical serves its endpoints as MCP tools: `/<name>/mcp`. */
export const mcpPath = (name: string): `/${string}` => `/${name}/mcp`

/** Sessions kept at once; the oldest is dropped beyond it, so idle clients cannot grow memory. */
const MAX_SESSIONS = 1_000
/** An MCP message is small; a larger body is refused unread. */
const MAX_MESSAGE_BYTES = 64 * 1024

export interface McpToolsSettings {
  readonly origin: string
  readonly name: string
  readonly intel: IntelSettings
  readonly endpoints: ReadonlyArray<Endpoint>
  readonly descriptions: Readonly<Record<Endpoint, string>>
  /** The endpoint's input checked, and the query it runs (VerticalApp.queryFor). */
  readonly queryFor: (endpoint: Endpoint, input: unknown, intel: IntelSettings) => Effect.Effect<Effect.Effect<unknown, VerticalError, StellarData>, VerticalError>
  readonly errorAnswer: (e: Exclude<VerticalError, { readonly _tag: "PaymentRequired" }>) => { readonly error: string; readonly message: string; readonly headers: Record<string, string> }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const errorResult = (text: string, meta?: Record<string, unknown>): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text }],
  ...(meta ? { _meta: meta } : {})
})

/**
 * The vertical's four endpoints as paid MCP tools over Streamable HTTP (the x402 MCP transport),
 * with the same prices, payee, paywall and answers as the HTTP endpoints. An unpaid call is
 * answered through the extension binding (`resultType: "payment_required"`) when the client
 * advertised `org.x402/payment` at `initialize`, else through the tool-result binding (`isError`
 * with the PaymentRequired). A call with `_meta["x402/payment"]` follows the HTTP order: input
 * checked, payment verified, data fetched, then settled, and the data leaves only with
 * `_meta["x402/payment-response"]`. Sessions are kept so the binding follows the client's
 * `initialize`.
 */
export const mcpEndpoint = (settings: McpToolsSettings) => {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>()
  const url = `${settings.origin}${mcpPath(settings.name)}`

  const serverFor = (runtime: Runtime.Runtime<Paywall | StellarData>) => {
    const server = new Server({ name: settings.name, version: "1.0.0" }, { capabilities: { tools: {} } })
    const run = Runtime.runPromise(runtime)

    const paymentRequired = (endpoint: Endpoint, reason: string) =>
      Effect.gen(function* () {
        const paywall = yield* Paywall
        const header = yield* paywall.challenge(endpoint, { url: `${url}#${endpoint}`, description: settings.descriptions[endpoint], mimeType: "application/json" }, reason)
        const required = decodePaymentRequiredHeader(header)
        const advertised = server.getClientCapabilities()?.extensions?.[X402_MCP_EXTENSION] !== undefined
        return (
          advertised
            ? { content: [], resultType: "payment_required", paymentRequired: required }
            : { isError: true, structuredContent: required as unknown as Record<string, unknown>, content: [{ type: "text", text: JSON.stringify(required) }] }
        ) as CallToolResult
      })

    const paid = (endpoint: Endpoint, input: unknown, payment: unknown) =>
      Effect.gen(function* () {
        const paywall = yield* Paywall
        const query = yield* settings.queryFor(endpoint, input, settings.intel)
        const verified = yield* paywall.verify(endpoint, encodePaymentSignatureHeader(payment as Parameters<typeof encodePaymentSignatureHeader>[0]))
        // Rendered before settling, so nothing that can fail stands between the charge and the answer.
        const answer = yield* query
        const settled = decodePaymentResponseHeader(yield* paywall.settle(verified))
        return {
          structuredContent: answer as Record<string, unknown>,
          content: [{ type: "text", text: JSON.stringify(answer) }],
          _meta: { [PAYMENT_RESPONSE_META]: settled }
        } satisfies CallToolResult
      })

    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: settings.endpoints.map((endpoint) => ({
        name: endpoint,
        description: `${settings.descriptions[endpoint]} Paid per call with x402 on Stellar.`,
        inputSchema: toolJsonSchema(endpoint === "eligibility" ? EligibilityBody : AssetBody)
      }))
    }))

    server.setRequestHandler(CallToolRequestSchema, async (request): Promise<CallToolResult> => {
      const endpoint = settings.endpoints.find((e) => e === request.params.name)
      if (endpoint === undefined) return errorResult(`unknown tool "${request.params.name}"; call tools/list`)
      const payment = request.params._meta?.[PAYMENT_META]
      const answer = isObject(payment)
        ? paid(endpoint, request.params.arguments ?? {}, payment)
        : paymentRequired(endpoint, "Payment required")
      return run(
        answer.pipe(
          Effect.catchAll((e: VerticalError) => {
            if (e._tag === "PaymentRequired") return paymentRequired(endpoint, e.reason ?? "Payment required")
            const { error, message, headers } = settings.errorAnswer(e)
            const response = headers["PAYMENT-RESPONSE"]
            return Effect.succeed(errorResult(`${error}: ${message}`, response ? { [PAYMENT_RESPONSE_META]: decodePaymentResponseHeader(response) } : undefined))
          })
        )
      )
    })
    return server
  }

  const remember = (id: string, transport: WebStandardStreamableHTTPServerTransport) => {
    sessions.set(id, transport)
    if (sessions.size <= MAX_SESSIONS) return
    const oldest = sessions.keys().next().value
    if (oldest !== undefined) {
      void sessions.get(oldest)?.close()
      sessions.delete(oldest)
    }
  }

  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const runtime = yield* Effect.runtime<Paywall | StellarData>()
    if (Number(request.headers["content-length"] ?? 0) > MAX_MESSAGE_BYTES) {
      return HttpServerResponse.unsafeJson({ error: "BODY_TOO_LARGE", message: `MCP messages are limited to ${MAX_MESSAGE_BYTES} bytes` }, { status: 413 })
    }
    const text = request.method === "POST" ? yield* Effect.orElseSucceed(request.text, () => "") : ""
    let body: unknown
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      return HttpServerResponse.unsafeJson({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }, { status: 400 })
    }
    const web = new Request(new URL(request.url, settings.origin), { method: request.method, headers: new Headers(request.headers) })
    const options = body === undefined ? undefined : { parsedBody: body }
    const known = sessions.get(request.headers["mcp-session-id"] ?? "")
    if (known !== undefined) return HttpServerResponse.fromWeb(yield* Effect.promise(() => known.handleRequest(web, options)))
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id): void => remember(id, transport),
      onsessionclosed: (id) => void sessions.delete(id)
    })
    yield* Effect.promise(() => serverFor(runtime).connect(transport))
    return HttpServerResponse.fromWeb(yield* Effect.promise(() => transport.handleRequest(web, options)))
  })
}
