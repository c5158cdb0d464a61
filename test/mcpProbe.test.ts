import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Either } from "effect"
import { decodeCatalog } from "../src/config.js"
import { mcpChallenge, readToolAnswer } from "../src/x402/mcpAnswer.js"
import { type McpSeller, startMcpSeller } from "./fixtures/mcpSeller.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

const TESTNET_USDC = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"

let x402: X402Fixture
let paymentRequired: unknown
let toolResult: McpSeller
let extension: McpSeller
let server: Awaited<ReturnType<typeof startServer>>
let guarded: Awaited<ReturnType<typeof startServer>>

const entry = (id: string, url: string, toolName: string) => ({
  resource: {
    id,
    type: "mcp",
    name: id,
    description: "an MCP tool",
    url,
    capabilities: ["demo.mcp"],
    mcp: { toolName }
  },
  provider: { id: "mcp-seller", name: "MCP seller" },
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
})

const validate = async (target: Awaited<ReturnType<typeof startServer>>, resourceId: string) => {
  const { status, body } = await request(`${target.url}/v1/validate`, { method: "POST", json: { resourceId } })
  expect(status).toBe(200)
  return body
}

beforeAll(async () => {
  x402 = await startX402Fixture()
  // A challenge produced by the official x402 server packages, served over MCP by the sellers.
  const answer = await fetch(x402.url("/paid"))
  paymentRequired = JSON.parse(Buffer.from(answer.headers.get("payment-required")!, "base64").toString("utf8"))
  toolResult = startMcpSeller({ paymentRequired, extension: false })
  extension = startMcpSeller({ paymentRequired, extension: true })
  const catalog = Either.getOrThrow(
    decodeCatalog(
      [
        entry("mcp.tool-result", toolResult.url, "paid"),
        entry("mcp.extension", extension.url, "paid"),
        ...["free", "garbage", "undecodable", "hang", "unknown"].map((tool) =>
          entry(`mcp.${tool}`, toolResult.url, tool)
        ),
        // An HTTP seller of the same capability at the same price: a competitor of the MCP tools.
        {
          resource: {
            id: "http.paid",
            type: "http",
            name: "http.paid",
            description: "an HTTP resource",
            url: x402.url("/paid"),
            capabilities: ["demo.mcp"]
          },
          provider: { id: "http-seller", name: "HTTP seller" },
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
      ],
      "catalog"
    )
  )
  const base = testConfig()
  server = await startServer({
    ...base,
    catalog,
    probes: { ...base.probes, allowPrivateTargets: true, timeoutMs: 1_000 }
  })
  guarded = await startServer({ ...base, catalog: catalog.slice(0, 1) })
})

afterAll(async () => {
  await server?.close()
  await guarded?.close()
  toolResult?.stop()
  extension?.stop()
  await x402?.stop()
})

describe("reading an MCP tool's answer (pure)", () => {
  test("each binding, a result that ran, and an error without a challenge", () => {
    expect(readToolAnswer({ resultType: "payment_required", paymentRequired: { x402Version: 2 } })).toEqual({
      _tag: "PaymentRequired",
      binding: "extension",
      paymentRequired: { x402Version: 2 }
    })
    expect(
      readToolAnswer({ isError: true, content: [{ type: "text", text: '{"x402Version":2,"accepts":[]}' }] })
    ).toMatchObject({ binding: "tool-result" })
    expect(readToolAnswer({ content: [{ type: "text", text: "data" }] })).toEqual({ _tag: "Executed" })
    expect(readToolAnswer({ isError: true, content: [{ type: "text", text: "nope" }] })._tag).toBe("NoChallenge")
  })

  test("the official challenge decodes through the HTTP decoder; a wrong one is malformed", () => {
    expect(mcpChallenge(paymentRequired)._tag).toBe("Decoded")
    expect(mcpChallenge({ x402Version: 2, accepts: "everything" })._tag).toBe("Malformed")
  })
})

describe("probes of mcp resources over Streamable HTTP", () => {
  test("each binding reaches PAYMENT_VERIFIED, and the observation names the binding", async () => {
    const viaResult = await validate(server, "mcp.tool-result")
    expect(viaResult).toMatchObject({ healthy: true, outcome: "healthy", status: "PAYMENT_VERIFIED" })
    expect(viaResult.observation).toMatchObject({
      method: "tools/call tool-result",
      payTo: FIXTURE_PAY_TO,
      amount: FIXTURE_AMOUNT,
      httpStatus: null
    })
    const viaExtension = await validate(server, "mcp.extension")
    expect(viaExtension).toMatchObject({ healthy: true, outcome: "healthy", status: "PAYMENT_VERIFIED" })
    expect(viaExtension.observation.method).toBe("tools/call extension")
  })

  test("a tool that runs unpaid, garbage, an undecodable challenge and a hang each get their outcome", async () => {
    expect(await validate(server, "mcp.free")).toMatchObject({ healthy: false, outcome: "executed_unpaid" })
    const garbage = await validate(server, "mcp.garbage")
    expect(garbage).toMatchObject({ healthy: false, outcome: "no_challenge" })
    expect(garbage.observation.detail).toContain("pay me somehow")
    expect(await validate(server, "mcp.undecodable")).toMatchObject({ healthy: false, outcome: "malformed_challenge" })
    const started = Date.now()
    expect(await validate(server, "mcp.hang")).toMatchObject({ healthy: false, outcome: "timeout" })
    expect(Date.now() - started).toBeLessThan(3_000)
  })

  test("the tools of one server share one session within the interval", async () => {
    const before = toolResult.initializes()
    for (const id of ["mcp.tool-result", "mcp.free", "mcp.garbage", "mcp.tool-result"]) await validate(server, id)
    // The hang above ended its session; at most one new initialize serves all four probes.
    expect(toolResult.initializes() - before).toBeLessThanOrEqual(1)
    const again = toolResult.initializes()
    for (const id of ["mcp.free", "mcp.tool-result"]) await validate(server, id)
    expect(toolResult.initializes()).toBe(again)
  })

  test("a server that restarted (its sessions gone) is met with one new session, in the same probe", async () => {
    await validate(server, "mcp.tool-result")
    const before = toolResult.initializes()
    toolResult.restart()
    expect(await validate(server, "mcp.tool-result")).toMatchObject({ healthy: true, outcome: "healthy" })
    expect(toolResult.initializes()).toBe(before + 1)
    expect(await validate(server, "mcp.free")).toMatchObject({ outcome: "executed_unpaid" })
    expect(toolResult.initializes()).toBe(before + 1)
  })

  test("an unknown tool is the server's JSON-RPC error: no_challenge, and the session is kept", async () => {
    await validate(server, "mcp.tool-result")
    const before = toolResult.initializes()
    const unknown = await validate(server, "mcp.unknown")
    expect(unknown).toMatchObject({ healthy: false, outcome: "no_challenge" })
    await validate(server, "mcp.tool-result")
    expect(toolResult.initializes()).toBe(before)
  })

  test("a server on a private address outside trustedOrigins is refused before any request", async () => {
    const before = toolResult.initializes()
    const calls = toolResult.calls.length
    // Recorded as a refused_target observation, and answered as the refusal it is.
    const refused = await request(`${guarded.url}/v1/validate`, {
      method: "POST",
      json: { resourceId: "mcp.tool-result" }
    })
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ error: "TARGET_REFUSED", message: expect.stringContaining("target refused") })
    const stored = await request(`${guarded.url}/v1/resources/mcp.tool-result/observations?limit=1`)
    expect(stored.body.observations[0]).toMatchObject({ outcome: "refused_target", method: "tools/call" })
    expect(toolResult.initializes()).toBe(before)
    expect(toolResult.calls.length).toBe(calls)
  })
})

describe("routing over http and mcp sellers of one capability", () => {
  test("both kinds are ranked in one route under the same rules, and the policy judges them alike", async () => {
    await validate(server, "http.paid")
    for (const id of ["mcp.tool-result", "mcp.extension"]) await validate(server, id)
    const { status, body } = await request(`${server.url}/v1/routes`, {
      method: "POST",
      json: { capability: "demo.mcp", optimizeFor: "cheapest" }
    })
    expect(status).toBe(200)
    const ranked = [body.selected, ...body.fallbacks].map((c: { resourceId: string }) => c.resourceId)
    expect(ranked.sort()).toEqual(["http.paid", "mcp.extension", "mcp.tool-result"])
    // The unhealthy MCP tools are rejected with the codes an unhealthy HTTP resource gets.
    const rejectedIds = body.rejected.map((r: { resourceId: string }) => r.resourceId)
    expect(rejectedIds).toEqual(
      expect.arrayContaining(["mcp.free", "mcp.garbage", "mcp.undecodable", "mcp.hang", "mcp.unknown"])
    )
    // A provider denied by policy is denied whatever its transport.
    const denied = await request(`${server.url}/v1/routes`, {
      method: "POST",
      json: { capability: "demo.mcp", constraints: { denyProviders: ["mcp-seller"] } }
    })
    expect({
      status: denied.status,
      selected: denied.body.selected?.resourceId,
      body: denied.status === 200 ? null : denied.body
    }).toEqual({ status: 200, selected: "http.paid", body: null })
    expect(denied.body.fallbacks).toEqual([])
  })
})
