import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { inputRequired, Server, type ServerContext } from "@modelcontextprotocol/server"
import { Effect, Runtime } from "effect"
import { isObject } from "../domain/isObject.js"
import { toolJsonSchema } from "../mcp/jsonSchema.js"
import { type McpFactory, serveMcpHttp } from "../mcp/serveHttp.js"
import { X402_MCP_EXTENSION } from "../x402/mcpAnswer.js"
import { AssetBody, EligibilityBody } from "./assetRef.js"
import type { VerticalError } from "./errors.js"
import {
  canElicit,
  type Era,
  extensionBinding,
  type PaidKind,
  type PaidOutcome,
  paymentOf,
  requestCapabilities,
  runPaid,
  settlementMeta
} from "./mcpPayment.js"
import { registerPaidReads } from "./mcpReads.js"
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
  readonly queryFor: (
    endpoint: Endpoint,
    input: unknown,
    intel: IntelSettings
  ) => Effect.Effect<Effect.Effect<unknown, VerticalError, StellarData>, VerticalError>
  readonly errorAnswer: (e: Exclude<VerticalError, { readonly _tag: "PaymentRequired" }>) => {
    readonly error: string
    readonly message: string
    readonly headers: Record<string, string>
  }
}

/**
 * The wallet an eligibility check lacks, asked of the client as an `input_required` round
 * (2026-07-28's multi-round-trip request) when the request declared elicitation; the retried
 * request carries the answer in `inputResponses`, which is untrusted: the endpoint's own input
 * schema judges it. A 2025-era request, or one that cannot elicit, is refused as the HTTP endpoint
 * refuses a body without a wallet.
 */
const WALLET_REQUEST = inputRequired.elicit({
  message: "Which Stellar account (G…) should be checked for this asset?",
  requestedSchema: {
    type: "object",
    properties: { wallet: { type: "string", description: "A G… account id" } },
    required: ["wallet"]
  }
})

const elicitedWallet = (inputResponses: Record<string, unknown> | undefined): string | undefined => {
  const answer = inputResponses?.wallet
  const content = isObject(answer) && answer.action === "accept" ? answer.content : undefined
  return isObject(content) && typeof content.wallet === "string" ? content.wallet : undefined
}

/** The input with any elicited wallet, or undefined when a wallet must be asked first. */
const completeInput = (
  endpoint: Endpoint,
  input: unknown,
  ctx: ServerContext,
  capabilities: Record<string, unknown>,
  era: Era
) => {
  if (endpoint !== "eligibility" || !isObject(input) || input.wallet !== undefined) return input
  const wallet = elicitedWallet(ctx.mcpReq.inputResponses)
  if (wallet !== undefined) return { ...input, wallet }
  return era === "modern" && canElicit(capabilities) ? undefined : input
}

const toolAnswer = (outcome: PaidOutcome<unknown>, extension: boolean) => {
  const json = (value: unknown) => [{ type: "text" as const, text: JSON.stringify(value) }]
  switch (outcome._tag) {
    case "Delivered":
      return {
        structuredContent: outcome.data as Record<string, unknown>,
        content: json(outcome.data),
        ...settlementMeta(outcome.settlement)
      }
    case "PaymentAsked":
      return extension
        ? {
            content: [],
            resultType: "payment_required",
            paymentRequired: outcome.paymentRequired,
            ...settlementMeta(outcome.settlement)
          }
        : {
            isError: true,
            structuredContent: outcome.paymentRequired as unknown as Record<string, unknown>,
            content: json(outcome.paymentRequired),
            ...settlementMeta(outcome.settlement)
          }
    case "Refused":
      return {
        isError: true,
        content: [{ type: "text" as const, text: `${outcome.error}: ${outcome.message}` }],
        ...settlementMeta(outcome.settlement)
      }
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
      {
        capabilities: {
          tools: {},
          resources: {},
          prompts: {},
          ...(era === "modern" ? { extensions: { [X402_MCP_EXTENSION]: {} } } : {})
        }
      }
    )
    const run = Runtime.runPromise(runtime)

    /** One paid operation of `endpoint` for this request, or an `input_required` round asking for what it lacks. */
    const paid = async (
      kind: PaidKind,
      endpoint: Endpoint,
      input: unknown,
      meta: unknown,
      resourceUrl: string,
      ctx: ServerContext
    ) => {
      // The SDK lifts the reserved `io.modelcontextprotocol/*` keys of this request's `_meta` into its envelope, in either generation.
      const capabilities = requestCapabilities(ctx.mcpReq.envelope)
      const payment = paymentOf(meta)
      const complete = payment === undefined ? input : completeInput(endpoint, input, ctx, capabilities, era)
      if (complete === undefined)
        return { _tag: "InputRequired", result: inputRequired({ inputRequests: { wallet: WALLET_REQUEST } }) } as const
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
      if (endpoint === undefined)
        return {
          isError: true,
          content: [{ type: "text" as const, text: `unknown tool "${request.params.name}"; call tools/list` }]
        }
      const answer = await paid(
        "tool",
        endpoint,
        request.params.arguments ?? {},
        request.params._meta,
        `${url}#${endpoint}`,
        ctx
      )
      return answer._tag === "InputRequired" ? answer.result : toolAnswer(answer.outcome, answer.extension)
    })

    registerPaidReads(server, settings, url, paid)
    return server
  }

  return Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const runtime = yield* Effect.runtime<Paywall | StellarData>()
    if (Number(request.headers["content-length"] ?? 0) > MAX_MESSAGE_BYTES) {
      return HttpServerResponse.unsafeJson(
        { error: "BODY_TOO_LARGE", message: `MCP messages are limited to ${MAX_MESSAGE_BYTES} bytes` },
        { status: 413 }
      )
    }
    const text = request.method === "POST" ? yield* Effect.orElseSucceed(request.text, () => "") : ""
    let body: unknown
    try {
      body = text === "" ? undefined : JSON.parse(text)
    } catch {
      return HttpServerResponse.unsafeJson(
        { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } },
        { status: 400 }
      )
    }
    const web = new Request(new URL(request.url, settings.origin), {
      method: request.method,
      headers: new Headers(request.headers)
    })
    const factory: McpFactory = (era) => serverFor(runtime, era)
    return HttpServerResponse.fromWeb(yield* Effect.promise(() => serveMcpHttp(factory, web, body)))
  })
}
