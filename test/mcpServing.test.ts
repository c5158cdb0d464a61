import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from "@modelcontextprotocol/client"
import { StdioClientTransport as V2StdioTransport } from "@modelcontextprotocol/client/stdio"
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport as V1StdioTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport as V1HttpTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { it } from "./support/effectTest.js"
import { inspector } from "./support/inspector.js"
import { TOOL_NAMES } from "./support/mcpTools.js"
import { recordingFetch } from "./support/mcpWire.js"
import { request, startServer, testConfig } from "./support/server.js"

const MODERN = "2026-07-28"
let http: Awaited<ReturnType<typeof startServer>>
let configPath: string

const v2 = () =>
  new V2Client({ name: "generations-test", version: "1.0.0" }, { versionNegotiation: { mode: { pin: MODERN } } })
const v1 = () => new V1Client({ name: "generations-test", version: "1.0.0" })
const stdioParams = () => ({
  command: process.execPath,
  args: ["src/main.ts", "mcp", "--config", configPath],
  stderr: "ignore" as const
})

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "sextant-mcp-gen-"))
  configPath = join(dir, "config.json")
  writeFileSync(
    configPath,
    JSON.stringify({
      database: join(dir, "sextant.db"),
      signer: { ed25519KeyFile: join(dir, "signer.key") },
      vertical: { enabled: false },
      facilitators: []
    })
  )
  http = await startServer(testConfig())
})

afterAll(async () => {
  await http?.close()
})

/** The catalog's first resource, as the HTTP API answers it: the tool must answer the same body. */
const firstResource = async (server: typeof http) =>
  (await it.run(server.client.resources.search({ payload: {} }))).resources[0]!.resource.id

describe("both MCP generations at /mcp", () => {
  test("a 2026-07-28 client lists and calls statelessly: no initialize, no session, resultType, ttlMs and the method headers", async () => {
    const wire = recordingFetch()
    const client = v2()
    await client.connect(new V2HttpTransport(new URL(`${http.url}/mcp`), { fetch: wire.fetch }))
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const id = await firstResource(http)
    const called = await client.callTool({ name: "get_resource", arguments: { id } })
    // Raw: the tool's JSON is compared with the API's JSON as sent, not with a decoded answer.
    const direct = await request(`${http.url}/v1/resources/${encodeURIComponent(id)}`)
    expect(called.structuredContent).toEqual(direct.body)

    const methods = wire.exchanges.map((e) => e.request?.method)
    expect(methods).not.toContain("initialize")
    expect(methods).toContain("server/discover")
    const list = wire.exchanges.find((e) => e.request?.method === "tools/list")!
    expect(list.response.result).toMatchObject({
      resultType: "complete",
      ttlMs: expect.any(Number),
      cacheScope: expect.any(String)
    })
    const call = wire.exchanges.find((e) => e.request?.method === "tools/call")!
    expect(call.headers.get("mcp-method")).toBe("tools/call")
    expect(call.headers.get("mcp-name")).toBe("get_resource")
    expect(call.response.result.resultType).toBe("complete")
    expect(wire.exchanges.every((e) => !e.headers.has("mcp-session-id"))).toBe(true)
    await client.close()
  })

  test("a 2025-11-25 client (the 1.x SDK) still initializes and calls the same tools", async () => {
    const client = v1()
    await client.connect(new V1HttpTransport(new URL(`${http.url}/mcp`)))
    expect(client.getServerVersion()?.name).toBe("sextant")
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const id = await firstResource(http)
    const called = await client.callTool({ name: "get_resource", arguments: { id } })
    // Raw: compared with the API's JSON as sent.
    expect(called.structuredContent).toEqual((await request(`${http.url}/v1/resources/${encodeURIComponent(id)}`)).body)
    expect((called as Record<string, unknown>).resultType).toBeUndefined()
    await client.close()
  })

  test("server/discover advertises 2026-07-28 and the tools capability", async () => {
    const answer = await request(`${http.url}/mcp`, {
      method: "POST",
      headers: {
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "server/discover"
      },
      json: {
        jsonrpc: "2.0",
        id: 1,
        method: "server/discover",
        params: {
          _meta: {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" }
          }
        }
      }
    })
    expect(answer.status).toBe(200)
    expect(answer.body.result).toMatchObject({
      resultType: "complete",
      supportedVersions: expect.arrayContaining([MODERN]),
      capabilities: { tools: {} }
    })
  })
})

describe("both MCP generations on stdio (sextant mcp)", () => {
  test("a 2026-07-28 client lists and calls the tools", async () => {
    const client = v2()
    await client.connect(new V2StdioTransport(stdioParams()))
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const missing = await client.callTool({ name: "get_resource", arguments: { id: "no.such.resource" } })
    expect(missing).toMatchObject({
      isError: true,
      content: [{ type: "text", text: expect.stringContaining("NOT_FOUND") }]
    })
    await client.close()
  })

  test("a 2025-11-25 client (the 1.x SDK) lists and calls the same tools", async () => {
    const client = v1()
    await client.connect(new V1StdioTransport(stdioParams()))
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    const missing = await client.callTool({ name: "get_resource", arguments: { id: "no.such.resource" } })
    expect(missing).toMatchObject({
      isError: true,
      content: [{ type: "text", text: expect.stringContaining("NOT_FOUND") }]
    })
    await client.close()
  })
})

describe("the MCP Inspector CLI", () => {
  test("lists Sextant's tools over stdio (sextant mcp)", async () => {
    // After `--`, the server command: its own --config is not the Inspector's.
    const listed = await inspector([
      "--method",
      "tools/list",
      "--",
      process.execPath,
      "src/main.ts",
      "mcp",
      "--config",
      configPath
    ])
    expect(listed.exitCode).toBe(0)
    expect(
      JSON.parse(listed.stdout)
        .tools.map((t: { name: string }) => t.name)
        .sort()
    ).toEqual(TOOL_NAMES)
  })
})
