import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Either } from "effect"
import { loadConfig } from "../src/config.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { TOOL_NAMES } from "./support/mcpTools.js"
import { request, startServer } from "./support/server.js"

let fixture: X402Fixture
let http: Awaited<ReturnType<typeof startServer>>
let client: Client

const callTool = async (name: string, args: Record<string, unknown>) =>
  (await client.callTool({ name, arguments: args })) as {
    structuredContent?: any
    isError?: boolean
    content: Array<{ type: string; text: string }>
  }

beforeAll(async () => {
  fixture = await startX402Fixture()
  const dir = mkdtempSync(join(tmpdir(), "sextant-mcp-"))
  const file = {
    database: join(dir, "sextant.db"),
    signer: { ed25519KeyFile: join(dir, "signer.key") },
    probes: { allowPrivateTargets: true, intervalSeconds: 86400 },
    vertical: { enabled: false },
    catalog: [
      {
        resource: {
          id: "fixture.paid",
          type: "http",
          name: "Fixture paid resource",
          description: "a real x402 challenge from the official server packages",
          url: fixture.url("/paid"),
          capabilities: ["demo.paid"]
        },
        provider: { id: "fixture", name: "Fixture" },
        paymentOptions: [
          {
            network: "stellar:testnet",
            scheme: "exact",
            asset: "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA",
            amount: FIXTURE_AMOUNT,
            amountUsd: 0.001,
            payTo: FIXTURE_PAY_TO
          }
        ]
      }
    ]
  }
  const configPath = join(dir, "config.json")
  writeFileSync(configPath, JSON.stringify(file))
  http = await startServer({ ...Either.getOrThrow(loadConfig(configPath, {})), host: "127.0.0.1", port: 0 })
  client = new Client({ name: "sextant-test", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["src/main.ts", "mcp", "--config", configPath],
      stderr: "ignore"
    })
  )
})

afterAll(async () => {
  await client?.close()
  await http?.close()
  await fixture?.stop()
})

describe("mcp over stdio", () => {
  test("tools/list names exactly the ten tools, each with object input and output schemas", async () => {
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES)
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object")
      expect(tool.outputSchema?.type).toBe("object")
    }
    const search = tools.find((t) => t.name === "search_resources")!
    expect(Object.keys(search.inputSchema.properties ?? {})).toContain("maxPriceUsd")
  })

  test("validate_endpoint probes and records on the same store the HTTP service reads", async () => {
    const probe = await callTool("validate_endpoint", { resourceId: "fixture.paid" })
    expect(probe.isError).toBeFalsy()
    expect(probe.structuredContent).toMatchObject({ resourceId: "fixture.paid", healthy: true, outcome: "healthy" })
    const { body } = await request(`${http.url}/v1/resources/fixture.paid/observations`)
    expect(body.observations[0]).toEqual(probe.structuredContent.observation)
  })

  test("each read tool answers exactly the HTTP endpoint's body for the same input", async () => {
    // A fixed span, so both reads ask for the same hours whatever the clock did between them.
    const from = new Date(Date.now() - 2 * 3_600_000).toISOString()
    const to = new Date(Date.now() + 3_600_000).toISOString()
    const pairs: ReadonlyArray<readonly [string, Record<string, unknown>, string, unknown?]> = [
      ["search_resources", { query: "fixture" }, "/v1/search", { query: "fixture" }],
      ["get_resource", { id: "fixture.paid" }, "/v1/resources/fixture.paid"],
      ["get_resource_metrics", { id: "fixture.paid" }, "/v1/resources/fixture.paid/metrics"],
      [
        "get_resource_history",
        { id: "fixture.paid", from, to },
        `/v1/resources/fixture.paid/history?from=${from}&to=${to}`
      ],
      [
        "list_discovery_resources",
        { limit: 5, offset: 0, type: "http" },
        "/x402/discovery/resources?limit=5&offset=0&type=http"
      ],
      ["search_discovery_resources", { query: "fixture", limit: 5 }, "/x402/discovery/search?query=fixture&limit=5"]
    ]
    for (const [tool, args, path, body] of pairs) {
      const viaMcp = await callTool(tool, args)
      const viaHttp = await request(`${http.url}${path}`, body === undefined ? {} : { method: "POST", json: body })
      expect(viaHttp.status).toBe(200)
      expect(viaMcp.structuredContent).toEqual(viaHttp.body)
      expect(JSON.parse(viaMcp.content[0]!.text)).toEqual(viaHttp.body)
    }
  })

  test("preflight_payment answers the HTTP verdict for the same challenge (its time aside)", async () => {
    const { body: detail } = await request(`${http.url}/v1/resources/fixture.paid`)
    const paid = detail.resource.url as string
    const option = detail.paymentOptions[0] as { network: string; asset: string; amount: string; payTo: string }
    const input = {
      url: paid,
      requirements: {
        scheme: "exact",
        network: option.network,
        asset: option.asset,
        amount: option.amount,
        payTo: option.payTo,
        maxTimeoutSeconds: 60
      }
    }
    const viaMcp = await callTool("preflight_payment", input)
    const viaHttp = await request(`${http.url}/v1/preflight`, { method: "POST", json: input })
    expect(viaHttp.status).toBe(200)
    const { evaluatedAt: _a, ...mcpVerdict } = viaMcp.structuredContent
    const { evaluatedAt: _b, ...httpVerdict } = viaHttp.body
    expect(mcpVerdict).toEqual(httpVerdict)
    expect(mcpVerdict.rating).toBe("URL")
  })

  test("get_resource_history passes its span: the probe's hour by default, nothing in a past day", async () => {
    const recent = await callTool("get_resource_history", { id: "fixture.paid" })
    expect(recent.structuredContent.hours.length).toBeGreaterThan(0)
    expect(
      recent.structuredContent.hours.reduce((n: number, h: { probes: number }) => n + h.probes, 0)
    ).toBeGreaterThan(0)
    const past = await callTool("get_resource_history", {
      id: "fixture.paid",
      from: "2025-01-01T00:00:00Z",
      to: "2025-01-02T00:00:00Z"
    })
    expect(past.structuredContent).toEqual({ resourceId: "fixture.paid", hours: [] })
  })

  test("route_resource answers the HTTP decision (times aside, which are the moment of each call)", async () => {
    const input = { capability: "demo.paid", optimizeFor: "cheapest" }
    const viaMcp = await callTool("route_resource", input)
    const viaHttp = await request(`${http.url}/v1/routes`, { method: "POST", json: input })
    const { decidedAt: _a, metricsSnapshotAt: _b, ...mcpRest } = viaMcp.structuredContent
    const { decidedAt: _c, metricsSnapshotAt: _d, ...httpRest } = viaHttp.body
    expect(mcpRest).toEqual(httpRest)
    expect(viaHttp.body.selected?.resourceId).toBe("fixture.paid")
  })

  test("get_resource_health gives status, level, transitions and the latest observation", async () => {
    const health = await callTool("get_resource_health", { id: "fixture.paid" })
    const detail = await request(`${http.url}/v1/resources/fixture.paid`)
    const latest = await request(`${http.url}/v1/resources/fixture.paid/observations?limit=1`)
    expect(health.structuredContent).toEqual({
      resourceId: "fixture.paid",
      status: detail.body.resource.status,
      verificationLevel: detail.body.resource.verificationLevel,
      transitions: detail.body.transitions,
      latestObservation: latest.body.observations[0]
    })
    expect(health.structuredContent.status).toBe("PAYMENT_VERIFIED")
  })

  test("unknown ids and invalid arguments are isError results, and the server keeps serving", async () => {
    const unknown = await callTool("get_resource_metrics", { id: "no-such-resource" })
    expect(unknown.isError).toBe(true)
    expect(unknown.content[0]!.text).toContain("no-such-resource")
    const span = await callTool("get_resource_history", {
      id: "fixture.paid",
      from: "2025-01-02T00:00:00Z",
      to: "2025-01-01T00:00:00Z"
    })
    expect(span.isError).toBe(true)
    expect(span.content[0]!.text).toBe("INVALID_REQUEST: from must be before to")
    const date = await callTool("get_resource_history", { id: "fixture.paid", from: "yesterday" })
    expect(date.isError).toBe(true)
    expect(date.content[0]!.text).toContain("from")
    const invalid = await callTool("route_resource", { capability: "Not A Capability" })
    expect(invalid.isError).toBe(true)
    expect(invalid.content[0]!.text).toContain("capability")
    const extra = await callTool("search_resources", { quer: "typo" })
    expect(extra.isError).toBe(true)
    const still = await callTool("get_resource", { id: "fixture.paid" })
    expect(still.isError).toBeFalsy()
  })
})
