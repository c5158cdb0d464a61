import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { inputRequired, ProtocolError, ProtocolErrorCode, Server, type ServerContext } from "@modelcontextprotocol/server"
import { Effect, Runtime } from "effect"
import { z } from "zod"
import { type McpFactory, serveMcpHttp } from "../mcp/serveHttp.js"
import { toolJsonSchema } from "../mcp/jsonSchema.js"
import { X402_MCP_EXTENSION } from "../x402/mcpAnswer.js"
import { AssetBody, EligibilityBody } from "./assetRef.js"
import type { VerticalError } from "./errors.js"
import { canElicit, type Era, extensionBinding, type PaidKind, type PaidOutcome, paymentOf, requestCapabilities, runPaid, settlementMeta } from "./mcpPayment.js"
import type { Endpoint, Paywall } from "./Paywall.js"
import type { IntelSettings } from "./queries.js"
import type { StellarData } from "./StellarData.js"

/** Where a vertical serves its endpoints over MCP: `/<name>/mcp`. */
export const mcpPath = (name: string): `/${string}` => `/${name}/mcp`

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

/** A paid resource's URI: `rwa://<vertical>/<endpoint>?asset=…[&wallet=…]`; its template lists the parameters. */
export const resourceTemplate = (name: string, endpoint: Endpoint) => `rwa://${name}/${endpoint}{?asset${endpoint === "eligibility" ? ",wallet" : ""}}`

/** The endpoint and input a paid resource URI names, or undefined when it names none of this vertical's. */
export const readResourceUri = (name: string, endpoints: ReadonlyArray<Endpoint>, uri: string): { endpoint: Endpoint; input: Record<string, string> } | undefined => {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return undefined
  }
  const endpoint = endpoints.find((e) => url.pathname === `/${e}`)
  if (url.protocol !== "rwa:" || url.host !== name || endpoint === undefined) return undefined
  return { endpoint, input: Object.fromEntries(url.searchParams) }
}

/**
 * Params as the protocol layer reads them before a handler: any object. The SDK parses a spec
 * method's params with its own schema and answers a failure -32603 with the validation dump;
 * reading them here answers malformed params -32602, as MCP asks (`tools/call` has the SDK's own check).
 */
const AnyParams = z.looseObject({})
const ReadParams = z.looseObject({ uri: z.string(), _meta: z.looseObject({}).optional() })
const PromptParams = z.looseObject({ name: z.string(), arguments: z.record(z.string(), z.string()).optional(), _meta: z.looseObject({}).optional() })

const paramsOf = <T>(schema: z.ZodType<T>, raw: unknown): T => {
  const parsed = schema.safeParse(raw)
  if (!parsed.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid params: ${parsed.error.issues.map((i) => `${i.path.join(".") || "params"}: ${i.message}`).join("; ")}`)
  return parsed.data
}

/** A paid prompt per endpoint: the endpoint's findings, bought, framed for a model to review. */
export const promptName = (endpoint: Endpoint) => `rwa_${endpoint}_review`

const PROMPT_ARGUMENTS = (endpoint: Endpoint) => [
  { name: "asset", description: "CODE:ISSUER, a token contract C…, or XLM", required: true },
  ...(endpoint === "eligibility" ? [{ name: "wallet", description: "The G… account that would hold the asset", required: true }] : [])
]

/**
 * The wallet an eligibility check lacks, asked of the client as an `input_required` round
 * (2026-07-28's multi-round-trip request) when the request declared elicitation; the retried
 * request carries the answer in `inputResponses`, which is untrusted: the endpoint's own input
 * schema judges it. A 2025-era request, or one that cannot elicit, is refused as the HTTP endpoint
 * refuses a body without a wallet.
 */
const WALLET_REQUEST = inputRequired.elicit({
  message: "Which Stellar account (G…) should be checked for this asset?",
  requestedSchema: { type: "object", properties: { wallet: { type: "string", description: "A G… account id" } }, required: ["wallet"] }
})

const elicitedWallet = (inputResponses: Record<string, unknown> | undefined): string | undefined => {
  const answer = inputResponses?.["wallet"]
  const content = isObject(answer) && answer["action"] === "accept" ? answer["content"] : undefined
  return isObject(content) && typeof content["wallet"] === "string" ? content["wallet"] : undefined
}

/** The input with any elicited wallet, or undefined when a wallet must be asked first. */
const completeInput = (endpoint: Endpoint, input: unknown, ctx: ServerContext, capabilities: Record<string, unknown>, era: Era) => {
  if (endpoint !== "eligibility" || !isObject(input) || input["wallet"] !== undefined) return input
  const wallet = elicitedWallet(ctx.mcpReq.inputResponses)
  if (wallet !== undefined) return { ...input, wallet }
  return era === "modern" && canElicit(capabilities) ? undefined : input
}

/** An outcome's wire form for a method that has no tool-result binding (resources/read, prompts/get). */
const nonToolAnswer = <R>(outcome: PaidOutcome<unknown>, extension: boolean, deliver: (data: unknown) => R): R => {
  switch (outcome._tag) {
    case "Delivered":
      return { ...deliver(outcome.data), ...settlementMeta(outcome.settlement) } as R
    case "PaymentAsked":
      if (extension) return { resultType: "payment_required", paymentRequired: outcome.paymentRequired, ...settlementMeta(outcome.settlement) } as unknown as R
      // x402's MCP transport has no payment request for these methods outside the extension.
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `payment required: this is paid, and a payment can be asked only of a request that advertises the ${X402_MCP_EXTENSION} extension in its own _meta client capabilities (io.modelcontextprotocol/clientCapabilities), or call the matching tool; nothing was run or charged`,
        settlementMeta(outcome.settlement)
      )
    case "Refused":
      throw new ProtocolError(
        outcome.error.startsWith("INVALID") || outcome.error.startsWith("BODY") ? ProtocolErrorCode.InvalidParams : ProtocolErrorCode.InternalError,
        `${outcome.error}: ${outcome.message}`,
        settlementMeta(outcome.settlement)
      )
  }
}

const toolAnswer = (outcome: PaidOutcome<unknown>, extension: boolean) => {
  const json = (value: unknown) => [{ type: "text" as const, text: JSON.stringify(value) }]
  switch (outcome._tag) {
    case "Delivered":
      return { structuredContent: outcome.data as Record<string, unknown>, content: json(outcome.data), ...settlementMeta(outcome.settlement) }
    case "PaymentAsked":
      return (
        extension
          ? { content: [], resultType: "payment_required", paymentRequired: outcome.paymentRequired, ...settlementMeta(outcome.settlement) }
          : { isError: true, structuredContent: outcome.paymentRequired as unknown as Record<string, unknown>, content: json(outcome.paymentRequired), ...settlementMeta(outcome.settlement) }
      )
    case "Refused":
      return { isError: true, content: [{ type: "text" as const, text: `${outcome.error}: ${outcome.message}` }], ...settlementMeta(outcome.settlement) }
  }
}

/**
 * The vertical's four endpoints over MCP, paid with x402 (the x402 MCP transport), at the HTTP
 * endpoints' prices, payee and paywall: each as a tool, as a resource read (`rwa://…`, listed as
 * templates) and as a prompt that frames the bought findings for review. Both generations are
 * served statelessly. The binding is decided per request (`extensionBinding`): a request that
 * advertises `org.x402/payment` in its own `_meta` client capabilities is asked with `resultType:
 * "payment_required"` (2026-07-28 for every method, 2025-era for resource reads and prompts; the
 * server advertises the extension in `server/discover`); any other tool call gets the tool-result
 * binding (`isError` with the PaymentRequired); a resource read or prompt outside the extension gets
 * a JSON-RPC error and
 * nothing runs. A request with `_meta["x402/payment"]` is served in the HTTP order (`runPaid`).
 */
export const mcpEndpoint = (settings: McpToolsSettings) => {
  const url = `${settings.origin}${mcpPath(settings.name)}`
  const schemaOf = (endpoint: Endpoint) => (endpoint === "eligibility" ? EligibilityBody : AssetBody)
  const tools = settings.endpoints.map((endpoint) => ({
    name: endpoint,
    description: `${settings.descriptions[endpoint]} Paid per call with x402 on Stellar.`,
    inputSchema: toolJsonSchema(schemaOf(endpoint))
  }))

  const serverFor = (runtime: Runtime.Runtime<Paywall | StellarData>, era: Era): Server => {
    const server = new Server(
      { name: settings.name, version: "1.0.0" },
      { capabilities: { tools: {}, resources: {}, prompts: {}, ...(era === "modern" ? { extensions: { [X402_MCP_EXTENSION]: {} } } : {}) } }
    )
    const run = Runtime.runPromise(runtime)

    /** One paid operation of `endpoint` for this request, or an `input_required` round asking for what it lacks. */
    const paid = async (kind: PaidKind, endpoint: Endpoint, input: unknown, meta: unknown, resourceUrl: string, ctx: ServerContext) => {
      // The SDK lifts the reserved `io.modelcontextprotocol/*` keys of this request's `_meta` into its envelope, in either generation.
      const capabilities = requestCapabilities(ctx.mcpReq.envelope)
      const payment = paymentOf(meta)
      const complete = payment === undefined ? input : completeInput(endpoint, input, ctx, capabilities, era)
      if (complete === undefined) return { _tag: "InputRequired", result: inputRequired({ inputRequests: { wallet: WALLET_REQUEST } }) } as const
      const outcome = await run(
        runPaid(
          {
            endpoint,
            resource: { url: resourceUrl, description: settings.descriptions[endpoint], mimeType: "application/json" },
            payment,
            query: settings.queryFor(endpoint, complete, settings.intel)
          },
          settings.errorAnswer
        )
      )
      return { _tag: "Outcome", outcome, extension: extensionBinding(era, kind, capabilities) } as const
    }

    server.setRequestHandler("tools/list", async () => ({ tools }))
    server.setRequestHandler("tools/call", async (request, ctx) => {
      const endpoint = settings.endpoints.find((e) => e === request.params.name)
      if (endpoint === undefined) return { isError: true, content: [{ type: "text" as const, text: `unknown tool "${request.params.name}"; call tools/list` }] }
      const answer = await paid("tool", endpoint, request.params.arguments ?? {}, request.params._meta, `${url}#${endpoint}`, ctx)
      return answer._tag === "InputRequired" ? answer.result : toolAnswer(answer.outcome, answer.extension)
    })

    server.setRequestHandler("resources/list", async () => ({ resources: [] }))
    server.setRequestHandler("resources/templates/list", async () => ({
      resourceTemplates: settings.endpoints.map((endpoint) => ({
        uriTemplate: resourceTemplate(settings.name, endpoint),
        name: endpoint,
        description: `${settings.descriptions[endpoint]} Paid per read with x402 on Stellar.`,
        mimeType: "application/json"
      }))
    }))
    server.setRequestHandler("resources/read", { params: AnyParams }, async (raw, ctx) => {
      const request = { params: paramsOf(ReadParams, raw) }
      const named = readResourceUri(settings.name, settings.endpoints, request.params.uri)
      if (named === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no resource "${request.params.uri}"; call resources/templates/list`)
      // Charged as this endpoint's resource (its origin and path), as tools and prompts are: a seller
      // receipt about the bare `rwa://` URI would not be about the server the buyer paid.
      const answer = await paid("resource", named.endpoint, named.input, request.params._meta, `${url}#resource/${request.params.uri}`, ctx)
      if (answer._tag === "InputRequired") return answer.result
      return nonToolAnswer(answer.outcome, answer.extension, (data) => ({
        contents: [{ uri: request.params.uri, mimeType: "application/json", text: JSON.stringify(data) }]
      }))
    })

    server.setRequestHandler("prompts/list", async () => ({
      prompts: settings.endpoints.map((endpoint) => ({
        name: promptName(endpoint),
        description: `A review of the ${endpoint} findings for an asset, bought with x402 on Stellar at the ${endpoint} price.`,
        arguments: PROMPT_ARGUMENTS(endpoint)
      }))
    }))
    server.setRequestHandler("prompts/get", { params: AnyParams }, async (raw, ctx) => {
      const request = { params: paramsOf(PromptParams, raw) }
      const endpoint = settings.endpoints.find((e) => promptName(e) === request.params.name)
      if (endpoint === undefined) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no prompt "${request.params.name}"; call prompts/list`)
      const answer = await paid("prompt", endpoint, { ...request.params.arguments }, request.params._meta, `${url}#prompt/${request.params.name}`, ctx)
      if (answer._tag === "InputRequired") return answer.result
      return nonToolAnswer(answer.outcome, answer.extension, (data) => ({
        description: `${settings.descriptions[endpoint]}`,
        messages: [
          {
            role: "user" as const,
            content: {
              type: "text" as const,
              text: `Review these ${endpoint} findings from ${settings.name} (observed on-ledger facts, not legal advice) and say what they mean for a holder:\n\n${JSON.stringify(data, null, 2)}`
            }
          }
        ]
      }))
    })
    return server
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
    const factory: McpFactory = (era) => serverFor(runtime, era)
    return HttpServerResponse.fromWeb(yield* Effect.promise(() => serveMcpHttp(factory, web, body)))
  })
}
