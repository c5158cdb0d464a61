import { Either, Schema } from "effect"
import { JsonObject } from "./json.js"

/** The x402 MCP transports the Bazaar names; Sextant probes and buys over `streamable-http`. */
export const McpTransport = Schema.Literal("streamable-http", "sse")
export type McpTransport = typeof McpTransport.Type

/**
 * The Bazaar's MCP discovery fields of an `mcp` resource, whose `url` is its server's endpoint:
 * which tool of that server is paid, over which transport, its arguments' JSON Schema and an
 * example call.
 */
export const McpTool = Schema.Struct({
  toolName: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  transport: Schema.optionalWith(McpTransport, { default: () => "streamable-http" as const }),
  inputSchema: Schema.optional(JsonObject),
  example: Schema.optional(JsonObject)
}).annotations({ identifier: "McpTool", description: "The MCP tool an mcp resource sells: the Bazaar's toolName, transport, inputSchema and example" })
export type McpTool = typeof McpTool.Type

const decodeTool = Schema.decodeUnknownEither(McpTool)

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The MCP fields of a Bazaar item or of a bazaar extension's `info.input`: `toolName` (the
 * extension's spelling; `tool` is read too, as older sellers send it), `transport`, and
 * `inputSchema` and `example` when they are objects. A reason when there is no usable tool.
 */
export const readMcpTool = (fields: unknown): Either.Either<McpTool, string> => {
  const input = isObject(fields) ? fields : {}
  const toolName = typeof input.toolName === "string" ? input.toolName : input.tool
  if (typeof toolName !== "string" || toolName.length === 0) return Either.left("toolName is required for an MCP tool")
  const decoded = decodeTool({
    toolName: toolName.slice(0, 200),
    ...(input.transport !== undefined ? { transport: input.transport } : {}),
    ...(isObject(input.inputSchema) ? { inputSchema: input.inputSchema } : {}),
    ...(isObject(input.example) ? { example: input.example } : {})
  })
  return Either.mapLeft(decoded, () => `transport must be "streamable-http" or "sse", not ${JSON.stringify(input.transport)}`)
}

/** Why a resource's type and MCP fields disagree, or null: an `mcp` resource names its tool, an `http` one has none. */
export const mcpFieldsRefusal = (resource: { readonly type: "http" | "mcp"; readonly mcp?: McpTool | undefined }): string | null =>
  resource.type === "mcp" && resource.mcp === undefined
    ? "an mcp resource needs resource.mcp.toolName"
    : resource.type === "http" && resource.mcp !== undefined
      ? "resource.mcp is only for resources of type mcp"
      : null
