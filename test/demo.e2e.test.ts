import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import { Either } from "effect"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { X402_MCP_EXTENSION } from "../src/x402/mcpAnswer.js"
import {
  type DemoServe,
  EXPECTED_STANDINGS,
  FAST_DEMO,
  listed,
  spawnDemoServe,
  waitForStandings
} from "./support/demoServe.js"
import { it } from "./support/effectTest.js"
import { recordingFetch } from "./support/mcpWire.js"
import { type TypedClient, typedClient } from "./support/server.js"

/**
 * A first run as a new user makes it: `serve` with no catalog configured starts the demo
 * providers beside the vertical, and probes alone sort them into their standings, reached only
 * over HTTP. The demo's timings are shortened (FAST_DEMO) and its ports moved; nothing else.
 */

const bundled = Either.getOrThrow(loadConfig(undefined, {})).catalog
const advertised = (id: string) => bundled.find((e) => e.resource.id === id)!.paymentOptions

describe("e2e: the demo providers as npm start runs them", () => {
  let demo: DemoServe
  let client: TypedClient

  beforeAll(async () => {
    demo = await spawnDemoServe()
    client = await typedClient(demo.service.url)
  })
  afterAll(() => demo?.service.stop())

  test("each provider reaches its standing within seconds: steady and slow verified, flaky degraded, the raiser quarantined", async () => {
    const started = Date.now()
    await waitForStandings(demo.service)
    expect(Date.now() - started).toBeLessThan(20_000)
    const byProvider = new Map((await listed(demo.service)).map((r) => [r.provider.id, r.provider.name]))
    expect([...byProvider.keys()].sort()).toEqual(Object.keys(EXPECTED_STANDINGS).sort())
    for (const [id, name] of byProvider) if (id.startsWith("demo-")) expect(name).toStartWith("Demo ")
    // The quarantine says why: the challenge asks twice the advertised price.
    const raiser = await it.run(client.resources.get({ path: { id: ResourceId.make("demo-raiser.rwa.inspect") } }))
    expect(raiser.transitions[0]).toMatchObject({
      to: "QUARANTINED",
      reason: expect.stringContaining("price above the advertised 5000 base units")
    })
  })

  test("their metrics diverge: the slow one's latency, the flaky one's reliability, the raiser's observed price", async () => {
    await waitForStandings(demo.service)
    const metrics = (id: string) => it.run(client.verification.metrics({ path: { id: ResourceId.make(id) } }))
    const [fast, slow, flaky, raiser] = await Promise.all([
      metrics("demo-fast.rwa.inspect"),
      metrics("demo-slow.rwa.inspect"),
      metrics("demo-flaky.rwa.inspect"),
      metrics("demo-raiser.rwa.inspect")
    ])
    expect(fast).toMatchObject({ reliability: 1, priceConsistency: 1, observedPriceUsd: 0.0012 })
    expect(slow.p50LatencyMs).toBeGreaterThanOrEqual(FAST_DEMO.slowDelayMs)
    expect(slow.p50LatencyMs).toBeGreaterThan(fast.p50LatencyMs!)
    expect(flaky.availability24h).toBe(1)
    expect(flaky.reliability).toBeGreaterThan(0)
    expect(flaky.reliability).toBeLessThan(0.8)
    expect(raiser.observedPriceUsd).toBe(0.001)
    expect(raiser.priceConsistency).toBeLessThan(1)
  })

  test("routes choose differently: cheapest takes the flaky provider, reliable a fully reliable one; the raiser is rejected as QUARANTINED", async () => {
    await waitForStandings(demo.service)
    const route = (optimizeFor: "cheapest" | "reliable") =>
      it.run(client.policy.route({ payload: { capability: "rwa.inspect", optimizeFor } }))
    const cheapest = await route("cheapest")
    const reliable = await route("reliable")
    expect(cheapest.selected?.resourceId).toBe<unknown>("demo-flaky.rwa.inspect")
    expect(reliable.selected?.resourceId).not.toBe(cheapest.selected?.resourceId)
    expect(reliable.selected?.metrics.reliability).toBe(1)
    for (const decision of [cheapest, reliable]) {
      expect(decision.rejected.map((r) => [r.resourceId, r.codes])).toEqual<unknown>([
        ["demo-raiser.rwa.inspect", ["QUARANTINED"]]
      ])
      // Three HTTP endpoints and two MCP tools (the vertical's and demo-fast's) behind the selection.
      expect(decision.fallbacks.length).toBe(5)
      const ranked = [decision.selected, ...decision.fallbacks].map((c) => c?.resourceId)
      expect(ranked).toEqual(
        expect.arrayContaining(["demo-fast.mcp.inspect", "stellar-intel.mcp.inspect", "demo-fast.rwa.inspect"])
      )
    }
  })

  test("a demo provider's 402 is a real x402 challenge offering the catalog's exact price and upto ceiling", async () => {
    const inspect = `http://127.0.0.1:${demo.ports.fast}/demo-fast/v1/rwa/inspect`
    const unpaid = await fetch(inspect, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" })
    expect(unpaid.status).toBe(402)
    const challenge = decodePaymentRequiredHeader(unpaid.headers.get("PAYMENT-REQUIRED") ?? "")
    expect(challenge.resource.url).toBe(inspect)
    const [exact, upto] = advertised("demo-fast.rwa.inspect")
    expect(challenge.accepts).toEqual([
      expect.objectContaining({
        scheme: "exact",
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: exact!.payTo,
        amount: exact!.amount
      }),
      expect.objectContaining({
        scheme: "upto",
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: upto!.payTo,
        amount: upto!.maxAmount
      })
    ])
  })

  test("a demo seller's MCP speaks 2026-07-28: server/discover advertises org.x402/payment, and an advertising call is asked its own price", async () => {
    const wire = recordingFetch()
    const client = new Client(
      { name: "demo-e2e", version: "1.0.0" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        capabilities: { extensions: { [X402_MCP_EXTENSION]: {} } }
      }
    )
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${demo.ports.fast}/demo-fast/mcp`), {
        fetch: wire.fetch
      })
    )
    expect(client.getServerCapabilities()?.extensions?.[X402_MCP_EXTENSION]).toBeDefined()
    await expect(
      client.callTool({
        name: "inspect",
        arguments: { asset: "USDC:GA5ZSEJYB37JRC5AVCIA5MOP4RHTM335X2KGX3IHOJAPP5RE34K4KZVN" }
      })
    ).rejects.toThrow(/payment_required/)
    const asked = wire.exchanges.at(-1)!.response.result
    const [exact] = advertised("demo-fast.mcp.inspect")
    expect(asked.resultType).toBe("payment_required")
    expect(asked.paymentRequired.accepts[0]).toMatchObject({
      scheme: "exact",
      payTo: exact!.payTo,
      amount: exact!.amount
    })
    await client.close()
  })
})
