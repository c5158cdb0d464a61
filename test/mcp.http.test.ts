import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { CallToolResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { inspector } from "./support/inspector.js"
import { TOOL_NAMES } from "./support/mcpTools.js"
import { request, startServer, testConfig } from "./support/server.js"

const KEY = "mcp-http-test-key-0123456789"

type Server = Awaited<ReturnType<typeof startServer>>
let open: Server
let keyed: Server

const connect = async (url: string, headers: Record<string, string> = {}) => {
  const client = new Client({ name: "sextant-http-test", version: "1.0.0" })
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }))
  return client
}

const callTool = async (client: Client, name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as {
    structuredContent?: any
    isError?: boolean
    content: Array<{ text: string }>
  }

beforeAll(async () => {
  open = await startServer(testConfig())
  keyed = await startServer(testConfig({ apiKeys: [{ principal: "ops", sha256: apiKeyHash(KEY), role: "operator" }] }))
})

afterAll(async () => {
  await open?.close()
  await keyed?.close()
})

describe("MCP over Streamable HTTP at /mcp", () => {
  test("the SDK client lists the same tools as stdio and reads the API's own answers", async () => {
    const client = await connect(open.url)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const viaMcp = await callTool(client, "search_resources", { query: "inspect" })
    // Raw: the tool's JSON is compared with the API's JSON as sent, not with a decoded answer.
    const viaHttp = await request(`${open.url}/v1/search`, { method: "POST", json: { query: "inspect" } })
    expect(viaHttp.status).toBe(200)
    expect(viaMcp.structuredContent).toEqual(viaHttp.body)
    const missing = await callTool(client, "get_resource", { id: "no-such-resource" })
    expect(missing.isError).toBe(true)
    expect(missing.content[0]!.text).toStartWith("NOT_FOUND:")
    await client.close()
  })

  test("with keys configured, no key or a wrong key is a 401 {error, message} and nothing runs", async () => {
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
    }
    const headers = { accept: "application/json, text/event-stream" }
    for (const extra of [{}, { authorization: "Bearer wrong-key" }] as Array<Record<string, string>>) {
      const answer = await request(`${keyed.url}/mcp`, {
        method: "POST",
        json: initialize,
        headers: { ...headers, ...extra }
      })
      expect(answer.status).toBe(401)
      expect(answer.body).toEqual({ error: "UNAUTHORIZED", message: expect.any(String) })
    }
    await expect(connect(keyed.url)).rejects.toThrow()
  })

  test("with a key, tools run, and each API request carries the caller's key", async () => {
    const client = await connect(keyed.url, { authorization: `Bearer ${KEY}` })
    expect((await client.listTools()).tools).toHaveLength(TOOL_NAMES.length)
    // POST /v1/validate is keyed: a 404 for the id (not a 401) shows the key reached the handler.
    const probe = await callTool(client, "validate_endpoint", { resourceId: "no-such-resource" })
    expect(probe.isError).toBe(true)
    expect(probe.content[0]!.text).toStartWith("NOT_FOUND:")
    await client.close()
  })

  test("GET, DELETE and any method but POST on the stateless /mcp are 405 with Allow: POST, not an empty event stream", async () => {
    for (const method of ["GET", "DELETE", "PUT", "PATCH"]) {
      const answer = await request(`${open.url}/mcp`, {
        method,
        headers: { accept: "text/event-stream, application/json" }
      })
      expect([method, answer.status, answer.headers.get("allow")]).toEqual([method, 405, "POST"])
      expect(answer.body).toMatchObject({ error: "METHOD_NOT_ALLOWED", message: expect.stringContaining("POST") })
    }
  })

  test("tools/call of an unknown tool and array arguments are JSON-RPC errors -32602, not results or -32603", async () => {
    const client = await connect(open.url)
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(McpError)
    expect(unknown).toMatchObject({
      code: ErrorCode.InvalidParams,
      message: expect.stringContaining('unknown tool "no_such_tool"')
    })
    const array = await client
      .request(
        {
          method: "tools/call",
          params: { name: "search_resources", arguments: [1, 2] as unknown as Record<string, unknown> }
        },
        CallToolResultSchema
      )
      .catch((e: unknown) => e)
    expect(array).toBeInstanceOf(McpError)
    expect(array).toMatchObject({ code: ErrorCode.InvalidParams })
    // Arguments that are an object but fail the tool's schema stay a tool result the model can read (MCP 2025-11-25).
    expect(await callTool(client, "get_resource", { id: 5 })).toMatchObject({ isError: true })
    await client.close()
  })
})

describe("the MCP Inspector CLI over the HTTP transport", () => {
  test("lists and calls Sextant's tools at /mcp", async () => {
    const listed = await inspector([`${open.url}/mcp`, "--transport", "http", "--method", "tools/list"])
    expect(listed.exitCode).toBe(0)
    const names = (JSON.parse(listed.stdout).tools as Array<{ name: string }>).map((t) => t.name)
    expect(names).toContain("route_resource")
    expect(names).toHaveLength(TOOL_NAMES.length)
    const called = await inspector([
      `${open.url}/mcp`,
      "--transport",
      "http",
      "--method",
      "tools/call",
      "--tool-name",
      "search_resources",
      "--tool-arg",
      "query=inspect"
    ])
    expect(called.exitCode).toBe(0)
    // Raw: the tool's JSON is compared with the API's JSON as sent, not with a decoded answer.
    const viaHttp = await request(`${open.url}/v1/search`, { method: "POST", json: { query: "inspect" } })
    expect(JSON.parse(called.stdout).structuredContent).toEqual(viaHttp.body)
    // A tool's error answer is the inspector's "tool_is_error" (its exit code 5), with the API's message.
    const missing = await inspector([
      `${open.url}/mcp`,
      "--transport",
      "http",
      "--method",
      "tools/call",
      "--tool-name",
      "get_resource",
      "--tool-arg",
      "id=no-such-resource"
    ])
    expect(missing.exitCode).toBe(5)
    expect(JSON.parse(missing.stdout)).toMatchObject({
      isError: true,
      content: [{ type: "text", text: expect.stringContaining("NOT_FOUND") }]
    })
  })

  test("without a key on a keyed server it fails, and with one it lists", async () => {
    // A 401 is where an MCP client would start OAuth; the inspector is told not to, and reports it.
    const refused = await inspector([
      `${keyed.url}/mcp`,
      "--transport",
      "http",
      "--method",
      "tools/list",
      "--stored-auth-only"
    ])
    expect(refused.exitCode).not.toBe(0)
    expect(JSON.parse(refused.stderr).error.code).toBe("auth_required")
    const listed = await inspector([
      `${keyed.url}/mcp`,
      "--transport",
      "http",
      "--method",
      "tools/list",
      "--header",
      `Authorization: Bearer ${KEY}`
    ])
    expect(listed.exitCode).toBe(0)
    expect(JSON.parse(listed.stdout).tools).toHaveLength(TOOL_NAMES.length)
  })
})
