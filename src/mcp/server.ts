import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Either, Schema } from "effect"
import { z } from "zod"
import { describeParseError } from "../domain/issues.js"
import { toolJsonSchema } from "./jsonSchema.js"
import { type ApiCall, type Tool, ToolFailure, TOOLS } from "./tools.js"

/** An HTTP error answer, carried to the MCP client as an `isError` result with its message. */
class ApiAnswerError extends ToolFailure {
  constructor(readonly status: number, readonly body: { error?: string; message?: string }) {
    super(`${body.error ?? `HTTP ${status}`}: ${body.message ?? "request failed"}`)
  }
}

const errorResult = (message: string): CallToolResult => ({ isError: true, content: [{ type: "text", text: message }] })

const decodeOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * `tools/call` as the protocol layer reads it before any handler: only the method. The SDK's
 * protocol layer parses a request with the handler's schema and answers a failure as -32603 with
 * the raw validation dump; with this one the SDK's own tools/call check runs instead, which answers
 * malformed params (array `arguments`) with -32602, as MCP 2025-11-25 asks.
 */
const AnyToolCall = z.object({ method: z.literal("tools/call"), params: z.unknown().optional() })

/**
 * An MCP server whose tools call the service's own HTTP handlers in-process (`handle` is the
 * HttpApi web handler), so both surfaces share every rule and every byte of their answers.
 * `extraTools` are offered after the spec's tools: the buyer's `buy_resource` when the server was
 * started with a buyer key.
 */
export const makeMcpServer = (
  handle: (request: Request) => Promise<Response>,
  version: string,
  extraTools: ReadonlyArray<Tool<any, any>> = []
) => {
  const tools: ReadonlyArray<Tool<any, any>> = [...TOOLS, ...extraTools]
  const fetchApi = async (call: ApiCall) => {
    const response = await handle(
      new Request(`http://sextant.local${call.path}`, {
        method: call.method,
        ...(call.body !== undefined
          ? { body: JSON.stringify(call.body), headers: { "content-type": "application/json" } }
          : {})
      })
    )
    const body = (await response.json()) as unknown
    if (!response.ok) throw new ApiAnswerError(response.status, body as { error?: string; message?: string })
    return body
  }

  const server = new Server({ name: "sextant", version }, { capabilities: { tools: {} } })

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: toolJsonSchema(t.input),
      outputSchema: toolJsonSchema(t.output)
    }))
  }))

  server.setRequestHandler(AnyToolCall, async (raw): Promise<CallToolResult> => {
    // The SDK checked the request against CallToolRequestSchema before this runs (-32602 if not).
    const request = CallToolRequestSchema.parse(raw)
    const tool = tools.find((t) => t.name === request.params.name)
    // A protocol error, not a tool result (MCP 2025-11-25, "Error Handling": unknown tools are -32602).
    if (tool === undefined) throw new McpError(ErrorCode.InvalidParams, `unknown tool "${request.params.name}"; call tools/list`)
    const decoded = Schema.decodeUnknownEither(tool.input as Schema.Schema<unknown>)(request.params.arguments ?? {}, decodeOptions)
    if (Either.isLeft(decoded)) {
      return errorResult(`invalid arguments: ${describeParseError(decoded.left)}`)
    }
    try {
      const structured = (await (tool.run as (input: unknown, f: typeof fetchApi) => Promise<unknown>)(decoded.right, fetchApi)) as Record<string, unknown>
      return { structuredContent: structured, content: [{ type: "text", text: JSON.stringify(structured, null, 2) }] }
    } catch (error) {
      if (error instanceof ToolFailure) return errorResult(error.message)
      throw error
    }
  })

  return { server, connectStdio: () => server.connect(new StdioServerTransport()) }
}
