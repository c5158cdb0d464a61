import {
  createMcpHandler,
  hostHeaderValidationResponse,
  isLegacyRequest,
  originValidationResponse,
  type Server,
  WebStandardStreamableHTTPServerTransport
} from "@modelcontextprotocol/server"

/** A fresh server for one request; `era` says which protocol generation the request speaks. */
export type McpFactory = (era: "legacy" | "modern") => Server

/** Host names (no port, IPv6 in brackets) a request may address and an Origin may name. */
export interface OriginRule {
  readonly hostnames: ReadonlyArray<string>
}

/**
 * One MCP request over Streamable HTTP, answered statelessly in both generations: a 2026-07-28
 * request (its `_meta` envelope claims the revision) by the SDK's per-request handler, a 2025-era
 * one (`initialize` and every claim-less POST) by a stateless transport answering JSON. Both take a
 * fresh server from the same factory, so the two generations offer the same tools and rules. No
 * session is kept: any instance behind a balancer answers any request, and idle clients hold no
 * memory. The SDK's own legacy fallback answers with an event stream; this one answers JSON, as
 * the endpoints did before, so a plain `fetch` can read every answer.
 *
 * `origin`, when given, refuses a foreign `Host` or `Origin` (403) before anything is parsed: the
 * MCP specification asks Streamable HTTP servers to validate `Origin` against DNS rebinding.
 */
export const serveMcpHttp = async (
  factory: McpFactory,
  request: Request,
  parsedBody: unknown,
  origin?: OriginRule
): Promise<Response> => {
  if (origin !== undefined) {
    const hostnames = [...origin.hostnames]
    const refused = hostHeaderValidationResponse(request, hostnames) ?? originValidationResponse(request, hostnames)
    if (refused !== undefined) return refused
  }
  // No session and no server-to-client stream: a GET stream or a DELETE has nothing to act on,
  // and Streamable HTTP lets such a server answer 405 (as the SDK's own stateless leg does).
  if (request.method !== "POST") {
    return Response.json(
      {
        jsonrpc: "2.0",
        id: null,
        error: {
          code: -32000,
          message: `${request.method} is not allowed: this stateless MCP endpoint takes JSON-RPC over POST only`
        }
      },
      { status: 405, headers: { allow: "POST" } }
    )
  }
  const body = parsedBody === undefined ? {} : { parsedBody }
  if (await isLegacyRequest(request, parsedBody)) {
    const server = factory("legacy")
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true
    })
    await server.connect(transport)
    try {
      return await transport.handleRequest(request, body)
    } finally {
      await server.close()
    }
  }
  const handler = createMcpHandler(() => factory("modern"), { legacy: "reject" })
  try {
    return await handler.fetch(request, body)
  } finally {
    await handler.close()
  }
}
