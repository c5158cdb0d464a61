import { Either, Schema } from "effect"
import { isObject } from "./isObject.js"
import { JsonObject } from "./json.js"

/** The x402 MCP transports the Bazaar names; Sextant probes and buys over `streamable-http`. */
export const McpTransport = Schema.Literal("streamable-http", "sse")
export type McpTransport = typeof McpTransport.Type

/**
 * What an MCP resource sells: a tool (`tools/call`), a resource (`resources/read`) or a prompt
 * (`prompts/get`), the three requests the x402 MCP extension binding paywalls.
 */
export const McpKind = Schema.Literal("tool", "resource", "prompt")
export type McpKind = typeof McpKind.Type

/**
 * The Bazaar's MCP discovery fields of an `mcp` resource, whose `url` is its server's endpoint:
 * what that server sells (`kind`, tool by default: entries stored before kinds existed are tools)
 * and its name (`toolName`, the Bazaar's field, kept for every kind: a tool's or prompt's name, a
 * resource's URI), over which transport, its arguments' JSON Schema and an example call. A server
 * may sell a tool and a prompt of the same name: (url, kind, name) is the identity.
 */
export const McpTool = Schema.Struct({
  kind: Schema.optionalWith(McpKind, { default: () => "tool" as const }),
  toolName: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  transport: Schema.optionalWith(McpTransport, { default: () => "streamable-http" as const }),
  inputSchema: Schema.optional(JsonObject),
  example: Schema.optional(JsonObject)
}).annotations({
  identifier: "McpTool",
  description:
    "What an mcp resource sells: its kind (tool, resource or prompt; tool by default), its name as the Bazaar's toolName (a resource's URI, a prompt's name), transport, inputSchema and example"
})
export type McpTool = typeof McpTool.Type

const decodeTool = Schema.decodeUnknownEither(McpTool)

/**
 * The MCP fields of a Bazaar item or of a bazaar extension's `info.input`: `toolName` (the
 * extension's spelling; `tool` is read too, as older sellers send it), `transport`, and
 * `inputSchema` and `example` when they are objects. A reason when there is no usable tool.
 */
export const readMcpTool = (fields: unknown): Either.Either<McpTool, string> => {
  const input = isObject(fields) ? fields : {}
  const toolName = typeof input.toolName === "string" ? input.toolName : input.tool
  if (typeof toolName !== "string" || toolName.length === 0) return Either.left("toolName is required for an MCP tool")
  if (input.kind !== undefined && !Schema.is(McpKind)(input.kind))
    return Either.left(`kind must be "tool", "resource" or "prompt", not ${JSON.stringify(input.kind)}`)
  const decoded = decodeTool({
    ...(input.kind !== undefined ? { kind: input.kind } : {}),
    toolName: toolName.slice(0, 200),
    ...(input.transport !== undefined ? { transport: input.transport } : {}),
    ...(isObject(input.inputSchema) ? { inputSchema: input.inputSchema } : {}),
    ...(isObject(input.example) ? { example: input.example } : {})
  })
  return Either.mapLeft(
    decoded,
    () => `transport must be "streamable-http" or "sse", not ${JSON.stringify(input.transport)}`
  )
}

/** Why a resource's type and MCP fields disagree, or null: an `mcp` resource names its tool, an `http` one has none. */
export const mcpFieldsRefusal = (resource: {
  readonly type: "http" | "mcp"
  readonly mcp?: McpTool | undefined
}): string | null =>
  resource.type === "mcp" && resource.mcp === undefined
    ? "an mcp resource needs resource.mcp.toolName"
    : resource.type === "http" && resource.mcp !== undefined
      ? "resource.mcp is only for resources of type mcp"
      : null

/** The JSON-RPC request that reads what an MCP resource sells, unpaid (`meta` adds `params._meta`). */
export const mcpRequestOf = (
  kind: McpKind,
  name: string,
  args: Readonly<Record<string, unknown>>,
  meta?: Readonly<Record<string, unknown>>
) => {
  const extra = meta === undefined ? {} : { _meta: meta }
  switch (kind) {
    case "tool":
      return { method: "tools/call", params: { name, arguments: args, ...extra } }
    case "resource":
      return { method: "resources/read", params: { uri: name, ...extra } }
    case "prompt":
      // A prompt's arguments are strings (MCP `prompts/get`): anything else goes as its JSON.
      return {
        method: "prompts/get",
        params: {
          name,
          arguments: Object.fromEntries(
            Object.entries(args).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])
          ),
          ...extra
        }
      }
  }
}
