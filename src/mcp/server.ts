import { type CallToolResult, ProtocolError, ProtocolErrorCode, Server } from "@modelcontextprotocol/server"
import { serveStdio } from "@modelcontextprotocol/server/stdio"
import { Either, Schema } from "effect"
import { describeParseError } from "../domain/issues.js"
import { isTaggedAs } from "../domain/tagged.js"
import { toolJsonSchema } from "./jsonSchema.js"
import { type ApiCall, TOOLS, type Tool, ToolFailure } from "./tools.js"

/** An HTTP error answer, carried to the MCP client as an `isError` result with its message. */
class ApiAnswerError extends ToolFailure {
  constructor(
    readonly status: number,
    readonly body: { error?: string; message?: string }
  ) {
    super({ message: `${body.error ?? `HTTP ${status}`}: ${body.message ?? "request failed"}` })
  }
}

const errorResult = (message: string): CallToolResult => ({ isError: true, content: [{ type: "text", text: message }] })

const decodeOptions = { errors: "all", onExcessProperty: "error" } as const

/**
 * A factory of MCP servers whose tools call the service's own HTTP handlers in-process (`handle`
 * is the HttpApi web handler), so both surfaces share every rule and every byte of their answers.
 * The official SDK's v2 line serves each server in either generation: 2026-07-28 (stateless,
 * `server/discover`, `resultType`, `ttlMs`) or 2025-11-25 (`initialize`). `extraTools` are offered
 * after the spec's tools: the buyer's `buy_resource` when the server was started with a buyer key.
 */
export const mcpServerFactory = (
  handle: (request: Request) => Promise<Response>,
  version: string,
  extraTools: ReadonlyArray<Tool<any, any>> = []
) => {
  const tools: ReadonlyArray<Tool<any, any>> = [...TOOLS, ...extraTools]
  const listed = tools.map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: toolJsonSchema(t.input),
    outputSchema: toolJsonSchema(t.output)
  }))
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

  return (): Server => {
    const server = new Server({ name: "sextant", version }, { capabilities: { tools: {} } })
    server.setRequestHandler("tools/list", async () => ({ tools: listed }))
    // The SDK has checked params against the tools/call schema before this runs (-32602 if not).
    server.setRequestHandler("tools/call", async (request): Promise<CallToolResult> => {
      const tool = tools.find((t) => t.name === request.params.name)
      // A protocol error, not a tool result (MCP "Error Handling": unknown tools are -32602).
      if (tool === undefined)
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `unknown tool "${request.params.name}"; call tools/list`
        )
      const decoded = Schema.decodeUnknownEither(tool.input as Schema.Schema<unknown>)(
        request.params.arguments ?? {},
        decodeOptions
      )
      if (Either.isLeft(decoded)) {
        return errorResult(`invalid arguments: ${describeParseError(decoded.left)}`)
      }
      try {
        const structured = (await (tool.run as (input: unknown, f: typeof fetchApi) => Promise<unknown>)(
          decoded.right,
          fetchApi
        )) as Record<string, unknown>
        return { structuredContent: structured, content: [{ type: "text", text: JSON.stringify(structured, null, 2) }] }
      } catch (error) {
        if (isTaggedAs<ToolFailure>(error, "ToolFailure")) return errorResult(error.message)
        throw error
      }
    })
    return server
  }
}

/** Serves the factory's servers on this process's stdio: the opening message picks the generation. */
export const serveMcpStdio = (factory: () => Server) => serveStdio(factory)
