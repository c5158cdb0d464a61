import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Either } from "effect"
import { decodeCatalog } from "../src/config.js"
import { type McpSeller, startMcpSeller } from "./fixtures/mcpSeller.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

const TOOLS = ["changes", "compliance", "eligibility", "inspect"]
const TESTNET_USDC = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"

let stack: Awaited<ReturnType<typeof startVerticalMcp>>
let x402: X402Fixture
let seller: McpSeller
let vertical: { readonly origin: string }
let mcpUrl: string
let trusting: Awaited<ReturnType<typeof startServer>>
let guarded: Awaited<ReturnType<typeof startServer>>
let quota: Awaited<ReturnType<typeof startServer>>

const register = (server: { url: string }, json: unknown) =>
  request(`${server.url}/v1/resources/register`, { method: "POST", json })

beforeAll(async () => {
  stack = await startVerticalMcp()
  ;({ vertical, mcpUrl } = stack)
  x402 = await startX402Fixture()
  const answer = await fetch(x402.url("/paid"))
  seller = startMcpSeller({
    paymentRequired: JSON.parse(Buffer.from(answer.headers.get("payment-required")!, "base64").toString("utf8")),
    extension: false
  })
  const base = testConfig()
  // The catalog file already sells the vertical's inspect tool, under its own id.
  const inspect = {
    resource: {
      id: "catalog.inspect",
      type: "mcp",
      name: "inspect",
      description: "inspect over MCP",
      url: mcpUrl,
      capabilities: ["demo.mcp"],
      mcp: { toolName: "inspect" }
    },
    provider: { id: "vertical", name: "vertical" },
    paymentOptions: [
      {
        network: "stellar:testnet",
        scheme: "exact",
        asset: TESTNET_USDC,
        amount: FIXTURE_AMOUNT,
        amountUsd: 0.001,
        payTo: FIXTURE_PAY_TO
      }
    ]
  }
  trusting = await startServer({
    ...base,
    catalog: Either.getOrThrow(decodeCatalog([inspect], "catalog")),
    probes: { ...base.probes, trustedOrigins: [vertical.origin, new URL(seller.url).origin], timeoutMs: 1_000 },
    limits: { ...base.limits, register: { requests: 100, windowSeconds: 60 } }
  })
  guarded = await startServer({ ...base, catalog: [] })
  quota = await startServer({
    ...base,
    catalog: [],
    probes: { ...base.probes, trustedOrigins: [vertical.origin] },
    ingestion: { ...base.ingestion, maxPerOrigin: 2 }
  })
})

afterAll(async () => {
  await trusting?.close()
  await guarded?.close()
  await quota?.close()
  seller?.stop()
  await x402?.stop()
  await stack?.stop()
})

describe("registering an MCP server (tools/list, then an unpaid tools/call per tool)", () => {
  test("the vertical's four tools are listed as mcp resources with their resource.mcp, PAYMENT_VERIFIED", async () => {
    const { status, body } = await register(trusting, { url: mcpUrl, type: "mcp" })
    expect(status).toBe(200)
    expect(body.documents).toEqual([{ url: mcpUrl, routes: 4, detail: null }])
    expect(body.routes.map((r: any) => [r.toolName, r.foundIn, r.outcome]).sort()).toEqual(
      TOOLS.map((t) => [t, "tools/list", t === "inspect" ? "already-cataloged" : "listed"])
    )
    expect(body.routes.find((r: any) => r.toolName === "inspect").resourceId).toBe("catalog.inspect")
    expect(body.listed).toBe(3)
    for (const route of body.routes.filter((r: any) => r.outcome === "listed")) {
      const detail = await request(`${trusting.url}/v1/resources/${route.resourceId}`)
      expect(detail.body.listing).toEqual({ listed: true, source: "registration", trusted: false })
      expect(detail.body.resource).toMatchObject({
        type: "mcp",
        url: mcpUrl,
        status: "PAYMENT_VERIFIED",
        mcp: { toolName: route.toolName, transport: "streamable-http" }
      })
      expect(detail.body.resource.mcp.inputSchema.type).toBe("object")
    }
    // A second registration finds them in the catalog and leaves them alone.
    const again = await register(trusting, { url: mcpUrl, type: "mcp" })
    expect(again.body.routes.map((r: any) => r.outcome)).toEqual([
      "already-cataloged",
      "already-cataloged",
      "already-cataloged",
      "already-cataloged"
    ])
  })

  test("a tool that runs unpaid is reported and not catalogued; a paid one beside it is", async () => {
    const { status, body } = await register(trusting, { url: seller.url, type: "mcp" })
    expect(status).toBe(200)
    const byTool = Object.fromEntries(body.routes.map((r: any) => [r.toolName, r]))
    expect(byTool.free.outcome).toBe("not-402")
    expect(byTool.free.resourceId).toBeNull()
    expect(byTool.paid.outcome).toBe("listed")
    expect(byTool.garbage.outcome).toBe("invalid-challenge")
    const listed = await request(`${trusting.url}/v1/resources?limit=100`)
    const names = listed.body.resources
      .filter((r: any) => r.resource.url === seller.url)
      .map((r: any) => r.resource.mcp.toolName)
    // `settles` asks for payment unpaid, as `paid` does (the fixture's paid-call resend tool).
    expect(names.sort()).toEqual(["paid", "settles"])
  })

  test("a server on a private address outside trustedOrigins is refused before any request", async () => {
    const before = seller.initializes()
    const { status, body } = await register(guarded, { url: seller.url, type: "mcp" })
    expect([status, body.error]).toEqual([400, "TARGET_REFUSED"])
    expect(seller.initializes()).toBe(before)
  })

  test("the ingestion quotas bound an MCP server's tools as they bound an origin's routes", async () => {
    const { body } = await register(quota, { url: mcpUrl, type: "mcp" })
    const outcomes = body.routes
      .map((r: any) => [r.outcome, r.outcome === "refused" ? r.detail.startsWith("quota:") : null])
      .sort()
    expect(outcomes).toEqual([
      ["listed", null],
      ["listed", null],
      ["refused", true],
      ["refused", true]
    ])
  })

  test("type mcp takes a url and no method", async () => {
    for (const json of [
      { origin: vertical.origin, type: "mcp" },
      { url: mcpUrl, type: "mcp", method: "GET" }
    ]) {
      const { status, body } = await register(trusting, json)
      expect([status, body.error]).toEqual([400, "INVALID_REQUEST"])
    }
  })
})
