import {
  type inputRequired,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext
} from "@modelcontextprotocol/server"
import { z } from "zod"
import { X402_MCP_EXTENSION } from "../x402/mcpAnswer.js"
import { type PaidKind, type PaidOutcome, settlementMeta } from "./mcpPayment.js"
import type { McpToolsSettings } from "./mcpTools.js"
import type { Endpoint } from "./Paywall.js"

/** One paid operation of an endpoint for a request: its outcome and binding, or an `input_required` round. */
export type PaidOperation = (
  kind: PaidKind,
  endpoint: Endpoint,
  input: unknown,
  meta: unknown,
  resourceUrl: string,
  ctx: ServerContext
) => Promise<
  | { readonly _tag: "InputRequired"; readonly result: ReturnType<typeof inputRequired> }
  | { readonly _tag: "Outcome"; readonly outcome: PaidOutcome<unknown>; readonly extension: boolean }
>

/** A paid resource's URI: `rwa://<vertical>/<endpoint>?asset=…[&wallet=…]`; its template lists the parameters. */
export const resourceTemplate = (name: string, endpoint: Endpoint) =>
  `rwa://${name}/${endpoint}{?asset${endpoint === "eligibility" ? ",wallet" : ""}}`

/** The endpoint and input a paid resource URI names, or undefined when it names none of this vertical's. */
export const readResourceUri = (
  name: string,
  endpoints: ReadonlyArray<Endpoint>,
  uri: string
): { endpoint: Endpoint; input: Record<string, string> } | undefined => {
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
const PromptParams = z.looseObject({
  name: z.string(),
  arguments: z.record(z.string(), z.string()).optional(),
  _meta: z.looseObject({}).optional()
})

const paramsOf = <T>(schema: z.ZodType<T>, raw: unknown): T => {
  const parsed = schema.safeParse(raw)
  if (!parsed.success)
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `invalid params: ${parsed.error.issues.map((i) => `${i.path.join(".") || "params"}: ${i.message}`).join("; ")}`
    )
  return parsed.data
}

/** A paid prompt per endpoint: the endpoint's findings, bought, framed for a model to review. */
export const promptName = (endpoint: Endpoint) => `rwa_${endpoint}_review`

const PROMPT_ARGUMENTS = (endpoint: Endpoint) => [
  { name: "asset", description: "CODE:ISSUER, a token contract C…, or XLM", required: true },
  ...(endpoint === "eligibility"
    ? [{ name: "wallet", description: "The G… account that would hold the asset", required: true }]
    : [])
]

/** An outcome's wire form for a method that has no tool-result binding (resources/read, prompts/get). */
const nonToolAnswer = <R>(outcome: PaidOutcome<unknown>, extension: boolean, deliver: (data: unknown) => R): R => {
  switch (outcome._tag) {
    case "Delivered":
      return { ...deliver(outcome.data), ...settlementMeta(outcome.settlement) } as R
    case "PaymentAsked":
      if (extension)
        return {
          resultType: "payment_required",
          paymentRequired: outcome.paymentRequired,
          ...settlementMeta(outcome.settlement)
        } as unknown as R
      // x402's MCP transport has no payment request for these methods outside the extension.
      throw new ProtocolError(
        ProtocolErrorCode.InvalidRequest,
        `payment required: this is paid, and a payment can be asked only of a request that advertises the ${X402_MCP_EXTENSION} extension in its own _meta client capabilities (io.modelcontextprotocol/clientCapabilities), or call the matching tool; nothing was run or charged`,
        settlementMeta(outcome.settlement)
      )
    case "Refused":
      throw new ProtocolError(
        outcome.error.startsWith("INVALID") || outcome.error.startsWith("BODY")
          ? ProtocolErrorCode.InvalidParams
          : ProtocolErrorCode.InternalError,
        `${outcome.error}: ${outcome.message}`,
        settlementMeta(outcome.settlement)
      )
  }
}

/**
 * The vertical's paid reads other than tools: each endpoint as a resource read (`rwa://…`, listed as
 * templates) and as a prompt framing the bought findings for review, both through `paid`.
 */
export const registerPaidReads = (server: Server, settings: McpToolsSettings, url: string, paid: PaidOperation) => {
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
    if (named === undefined)
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `no resource "${request.params.uri}"; call resources/templates/list`
      )
    // Charged as this endpoint's resource (its origin and path), as tools and prompts are: a seller
    // receipt about the bare `rwa://` URI would not be about the server the buyer paid.
    const answer = await paid(
      "resource",
      named.endpoint,
      named.input,
      request.params._meta,
      `${url}#resource/${request.params.uri}`,
      ctx
    )
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
    if (endpoint === undefined)
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `no prompt "${request.params.name}"; call prompts/list`)
    const answer = await paid(
      "prompt",
      endpoint,
      { ...request.params.arguments },
      request.params._meta,
      `${url}#prompt/${request.params.name}`,
      ctx
    )
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
}
