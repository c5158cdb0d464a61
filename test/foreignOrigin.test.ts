/**
 * Open mode trusts loopback only as loopback. Without API keys every caller is anonymous, so a web
 * page on the operator's machine that rebinds its name to 127.0.0.1 (a foreign `Host`), or posts
 * to the service cross-site (a foreign `Origin`, a body without a JSON content type), would act as
 * the operator's own client: each is refused with `{error, message}`, `/mcp` included. Clients
 * that address the service as loopback (the MCP SDK's client here) keep working.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import http from "node:http"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { foreignRequestRefusal } from "../src/http/openMode.js"
import { request, startServer, testConfig } from "./support/server.js"

const open = { host: "127.0.0.1", allowedHosts: [] as Array<string>, apiKeys: [] }

describe("foreignRequestRefusal (pure)", () => {
  test("loopback names and addresses, the configured host and allowedHosts are this service, at any port", () => {
    for (const host of ["127.0.0.1:4020", "localhost:4020", "LOCALHOST", "[::1]:4020", "127.9.9.9"]) {
      expect(foreignRequestRefusal(open, { host })).toBeUndefined()
    }
    expect(foreignRequestRefusal({ ...open, host: "10.0.0.5" }, { host: "10.0.0.5:4020" })).toBeUndefined()
    expect(
      foreignRequestRefusal({ ...open, allowedHosts: ["sextant.example.com"] }, { host: "Sextant.Example.com" })
    ).toBeUndefined()
  })

  test("another name, a missing Host, or a rebound name is refused", () => {
    for (const host of [
      "evil.example:4020",
      "sextant.example.com",
      "169.254.169.254",
      "10.0.0.1:4020",
      "",
      "127.0.0.1.evil.example"
    ]) {
      expect(foreignRequestRefusal(open, { host })).toContain("addressed to")
    }
    expect(foreignRequestRefusal(open, {})).toContain("addressed to")
  })

  test("an Origin must be http(s) on a name of this service; none at all is a non-browser client", () => {
    expect(foreignRequestRefusal(open, { host: "127.0.0.1:4020", origin: "http://localhost:4020" })).toBeUndefined()
    expect(foreignRequestRefusal(open, { host: "127.0.0.1:4020", origin: "http://[::1]:4020" })).toBeUndefined()
    for (const origin of [
      "https://evil.example",
      "null",
      "file://",
      "chrome-extension://abc",
      "http://127.0.0.1.evil.example"
    ]) {
      expect(foreignRequestRefusal(open, { host: "127.0.0.1:4020", origin })).toContain("Origin")
    }
  })

  test("with API keys configured the check is off: a page holds no key", () => {
    const keyed = { ...open, apiKeys: [{ principal: "p", sha256: "0".repeat(64) }] } as never
    expect(foreignRequestRefusal(keyed, { host: "evil.example", origin: "https://evil.example" })).toBeUndefined()
  })
})

/** A request with a Host header of our choosing (fetch sends the URL's), through node:http. */
const withHost = (
  url: string,
  host: string,
  init: { method?: string; path: string; body?: string; headers?: Record<string, string> }
) =>
  new Promise<{ status: number; body: any }>((resolve, reject) => {
    const target = new URL(url)
    const req = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: init.method ?? "GET",
        path: init.path,
        headers: { ...init.headers, host }
      },
      (res) => {
        let text = ""
        res.on("data", (chunk) => (text += chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text === "" ? null : JSON.parse(text) }))
      }
    )
    req.on("error", reject)
    if (init.body !== undefined) req.write(init.body)
    req.end()
  })

const mcpInitialize = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "page", version: "1" } }
})
const mcpHeaders = { "content-type": "application/json", accept: "application/json, text/event-stream" }

describe("open mode over HTTP", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(testConfig())
  })
  afterAll(() => server.close())

  test("a rebound name reading the settlement journal is 403 FOREIGN_ORIGIN; loopback reads it", async () => {
    const rebound = await withHost(server.url, "evil.example:4020", { path: "/x402/settlements" })
    expect(rebound.status).toBe(403)
    expect(rebound.body.error).toBe("FOREIGN_ORIGIN")
    expect(rebound.body.message).toContain("evil.example")
    const local = await request(`${server.url}/x402/settlements`)
    expect(local.status).toBe(200)
  })

  test("a cross-site page posting JSON is 403 FOREIGN_ORIGIN; the same request from no page is taken", async () => {
    const json = { query: "compliance" }
    const page = await request(`${server.url}/v1/search`, {
      method: "POST",
      json,
      headers: { origin: "https://evil.example" }
    })
    expect(page.status).toBe(403)
    expect(page.body.error).toBe("FOREIGN_ORIGIN")
    const sameOrigin = await request(`${server.url}/v1/search`, {
      method: "POST",
      json,
      headers: { origin: server.url }
    })
    expect(sameOrigin.status).toBe(200)
  })

  test("a body without a content type (a page's Blob, no preflight) is 415 on a write", async () => {
    const blob = await fetch(`${server.url}/v1/resources/register`, {
      method: "POST",
      body: new Blob([JSON.stringify({ url: "http://127.0.0.1:9/x" })])
    })
    expect(blob.status).toBe(415)
    expect(((await blob.json()) as any).error).toBe("UNSUPPORTED_MEDIA_TYPE")
  })

  test("/mcp: a foreign Host or Origin is 403, a Blob body 415; the MCP SDK's own client lists the tools", async () => {
    const rebound = await withHost(server.url, "evil.example", {
      method: "POST",
      path: "/mcp",
      body: mcpInitialize,
      headers: mcpHeaders
    })
    expect(rebound.status).toBe(403)
    expect(rebound.body.error).toBe("FOREIGN_ORIGIN")
    const page = await request(`${server.url}/mcp`, {
      method: "POST",
      body: mcpInitialize,
      headers: { ...mcpHeaders, origin: "https://evil.example" }
    })
    expect(page.status).toBe(403)
    expect(page.body.error).toBe("FOREIGN_ORIGIN")
    const blob = await fetch(`${server.url}/mcp`, {
      method: "POST",
      body: new Blob([mcpInitialize]),
      headers: { accept: mcpHeaders.accept }
    })
    expect(blob.status).toBe(415)
    const client = new Client({ name: "test", version: "1" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toContain("search_resources")
    const found = await client.callTool({ name: "search_resources", arguments: { query: "compliance" } })
    expect(found.isError).toBeFalsy()
    await client.close()
  })

  test("liveness and readiness answer whatever name a probe addresses the pod by", async () => {
    const live = await withHost(server.url, "10.1.2.3:4020", { path: "/health/live" })
    expect(live.status).toBe(200)
  })
})

describe("behind a reverse proxy", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(testConfig({ allowedHosts: ["sextant.example.com"] }))
  })
  afterAll(() => server.close())

  test("the public name in allowedHosts is taken, as Host and as Origin; other names are still refused", async () => {
    const proxied = await withHost(server.url, "sextant.example.com", {
      path: "/x402/settlements",
      headers: { origin: "https://sextant.example.com" }
    })
    expect(proxied.status).toBe(200)
    const other = await withHost(server.url, "other.example.com", { path: "/x402/settlements" })
    expect(other.status).toBe(403)
  })
})

describe("/mcp behind a proxy", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    const base = testConfig()
    server = await startServer(
      testConfig({
        limits: { ...base.limits, search: { requests: 2, windowSeconds: 60 }, clientAddressHeader: "x-forwarded-for" }
      })
    )
  })
  afterAll(() => server.close())

  const searchAs = async (address: string) => {
    const client = new Client({ name: "test", version: "1" })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
        requestInit: { headers: { "x-forwarded-for": address } }
      })
    )
    const answer = await client.callTool({ name: "search_resources", arguments: { query: "compliance" } })
    await client.close()
    return answer
  }

  test("each caller is limited on the address the proxy wrote, not on the proxy's", async () => {
    expect((await searchAs("203.0.113.7")).isError).toBeFalsy()
    expect((await searchAs("203.0.113.7")).isError).toBeFalsy()
    const third = await searchAs("203.0.113.7")
    expect(third.isError).toBe(true)
    expect(JSON.stringify(third.content)).toContain("RATE_LIMITED")
    expect((await searchAs("198.51.100.9")).isError).toBeFalsy()
  })
})
