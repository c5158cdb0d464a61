import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { apiKeyHash } from "../src/http/authLive.js"
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
  (await client.callTool({ name, arguments: args })) as { structuredContent?: any; isError?: boolean; content: Array<{ text: string }> }

beforeAll(async () => {
  open = await startServer(testConfig())
  keyed = await startServer(testConfig({ apiKeys: [{ principal: "ops", sha256: apiKeyHash(KEY), role: "operator" }] }))
})

afterAll(async () => {
  await open?.close()
  await keyed?.close()
})

describe("MCP over Streamable HTTP at /mcp", () => {
  test("the SDK client lists the same eight tools as stdio and reads the API's own answers", async () => {
    const client = await connect(open.url)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual([
      "get_resource",
      "get_resource_health",
      "get_resource_history",
      "get_resource_metrics",
      "list_discovery_resources",
      "route_resource",
      "search_resources",
      "validate_endpoint"
    ])
    const viaMcp = await callTool(client, "search_resources", { query: "inspect" })
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
    for (const extra of [{}, { authorization: "Bearer wrong-key" }]) {
      const answer = await request(`${keyed.url}/mcp`, { method: "POST", json: initialize, headers: { ...headers, ...extra } })
      expect(answer.status).toBe(401)
      expect(answer.body).toEqual({ error: "UNAUTHORIZED", message: expect.any(String) })
    }
    await expect(connect(keyed.url)).rejects.toThrow()
  })

  test("with a key, tools run, and each API request carries the caller's key", async () => {
    const client = await connect(keyed.url, { authorization: `Bearer ${KEY}` })
    expect((await client.listTools()).tools).toHaveLength(8)
    // POST /v1/validate is keyed: a 404 for the id (not a 401) shows the key reached the handler.
    const probe = await callTool(client, "validate_endpoint", { resourceId: "no-such-resource" })
    expect(probe.isError).toBe(true)
    expect(probe.content[0]!.text).toStartWith("NOT_FOUND:")
    await client.close()
  })

  test("an unknown method on /mcp is answered by the MCP transport, not a 500", async () => {
    const answer = await request(`${open.url}/mcp`, { method: "PUT" })
    expect(answer.status).toBe(405)
  })
})
