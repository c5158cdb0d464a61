import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Either } from "effect"
import { decodeCatalog, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { payForTool } from "../src/payments/payForTool.js"
import { observeMcp } from "../src/verification/mcpProbe.js"
import { MAX_MCP_SESSIONS, mcpSessions } from "../src/verification/mcpSessions.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { type McpStorm, startMcpStorm } from "./fixtures/mcpStorm.js"
import { buildExactPayment, exactRequirements } from "./fixtures/stellarPayment.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "./fixtures/x402Terms.js"
import { it } from "./support/effectTest.js"
import { facilitatorsAnswered, request, startServer, testConfig } from "./support/server.js"

/**
 * MCP clients send only what they decide to send: a server answering each `tools/call` with a
 * storm of `ping` requests gets no answer to any of them, a JSON batch in answer to one request
 * is refused, and a probe sends at most PROBE_REQUEST_BOUND requests (docs/trust.md).
 */

/** `server/discover`, `initialize`, `notifications/initialized`, `tools/call` and a cancellation when it times out. */
const PROBE_REQUEST_BOUND = 5
const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"

const base = testConfig()
const config = testConfig({ probes: { ...base.probes, allowPrivateTargets: true, timeoutMs: 3000 } })
const target = (url: string, toolName = "storm") => ({
  resourceId: ResourceId.make(`mcp.${toolName}`),
  url,
  method: "POST" as const,
  advertised: [],
  mcp: { kind: "tool" as const, toolName, transport: "streamable-http" as const }
})

let batch: McpStorm
let stream: McpStorm

/** A purchase of the storm server's paid tool at `path`, with a ledger nobody listens on: it must never get that far. */
const buyStorm = (path: string) =>
  payForTool({
    url: batch.url(path),
    toolName: "storm",
    arguments: {},
    signer: Keypair.random(),
    rpcUrl: "http://127.0.0.1:9",
    inclusionFeeStroops: 10_000,
    deployment: { network: config.network, assetContract: config.asset.assetContract },
    maxPrice: 1_000_000n,
    outbound: { ...config.buyer, allowPrivateTargets: true, trustedOrigins: [], timeoutMs: 3000 }
  })
beforeAll(() => {
  batch = startMcpStorm({ pings: 1250 })
  stream = startMcpStorm({ pings: 250 })
})
afterAll(() => {
  batch.stop()
  stream.stop()
})

describe("an MCP server storming its client with pings", () => {
  it.live("a JSON batch in answer to tools/call is refused: no ping answered, at most the bound of requests", () =>
    Effect.gen(function* () {
      const observed = yield* observeMcp(target(batch.url("/batch/mcp")), config, mcpSessions(config))
      expect(observed.observation.outcome).toBe("unreachable")
      expect(observed.observation.detail).toContain("batch")
      expect(batch.pingAnswers()).toBe(0)
      expect(batch.requests()).toBeLessThanOrEqual(PROBE_REQUEST_BOUND)
    })
  )

  test("pings and notifications in an event stream are dropped; the result still reaches the probe", async () => {
    const before = stream.requests()
    const observed = await it.run(observeMcp(target(stream.url("/sse/mcp")), config, mcpSessions(config)))
    expect(observed.observation.outcome).toBe("executed_unpaid")
    // Answers the SDK would send are not awaited by the call: give them time to arrive.
    await Bun.sleep(300)
    expect(stream.pingAnswers()).toBe(0)
    expect(stream.requests() - before).toBeLessThanOrEqual(PROBE_REQUEST_BOUND)
  })
})

describe("the buyer's paid tool call against a storming server", () => {
  test("the batch is refused before anything is signed: no ping answered, at most the handshake and the call sent", async () => {
    const before = batch.requests()
    const answers = batch.pingAnswers()
    const outcome = await it.run(Effect.either(buyStorm("/batch/buy")))
    expect(outcome).toEqual(Either.left(expect.objectContaining({ _tag: "Unreachable" })))
    await Bun.sleep(300)
    expect(batch.pingAnswers() - answers).toBe(0)
    expect(batch.requests() - before).toBeLessThanOrEqual(PROBE_REQUEST_BOUND)
  })
})

describe("a storm while the service forwards verifies", () => {
  let facilitator: FixtureFacilitator
  let server: Awaited<ReturnType<typeof startServer>>
  // Verify runs settle's local checks: the payment it forwards pays a payee its probes verified.
  let seller: X402Fixture
  const TOOLS = 20

  beforeAll(async () => {
    facilitator = startFacilitator()
    seller = await startX402Fixture()
    const option = {
      network: "stellar:testnet" as const,
      scheme: "exact" as const,
      asset: TESTNET_USDC,
      amount: "10000",
      amountUsd: 0.001,
      payTo: PAY_TO
    }
    const catalog = Either.getOrThrow(
      decodeCatalog(
        Array.from({ length: TOOLS }, (_, i) => ({
          resource: {
            id: `storm.${i}`,
            type: "mcp",
            name: `storm ${i}`,
            description: "storm",
            url: batch.url("/batch/mcp"),
            capabilities: ["demo.storm"],
            mcp: { toolName: `tool-${i}` }
          },
          provider: { id: "storm", name: "storm" },
          paymentOptions: [option]
        })).concat([
          {
            resource: {
              id: "seller.paid",
              type: "http",
              name: "seller",
              description: "an honest seller",
              url: seller.url("/paid/storm"),
              capabilities: ["demo.storm"]
            },
            provider: { id: "seller", name: "seller" },
            paymentOptions: [{ ...option, amount: FIXTURE_AMOUNT, payTo: FIXTURE_PAY_TO }]
          } as any
        ]),
        "catalog"
      )
    )
    server = await startServer(
      testConfig({ catalog, facilitators: [{ id: "a", url: facilitator.url }], probes: { ...config.probes } })
    )
    await facilitatorsAnswered(server.url)
    expect(
      (await it.run(server.client.verification.validate({ payload: { resourceId: ResourceId.make("seller.paid") } })))
        .resourceId
    ).toBe<unknown>("seller.paid")
  })
  afterAll(async () => {
    await server.close()
    await facilitator.stop()
    await seller.stop()
  })

  test(`${TOOLS} tools of one storming server validated at once: verify stays fast, the server gets at most the bound per probe`, async () => {
    const paymentRequirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
    const paymentPayload = await buildExactPayment(exactRequirements({ payTo: FIXTURE_PAY_TO }))
    const verify = async () => {
      const started = performance.now()
      const answer = await request(`${server.url}/x402/verify`, {
        method: "POST",
        json: { x402Version: 2, paymentPayload, paymentRequirements }
      })
      return { status: answer.status, ms: performance.now() - started }
    }
    const before = batch.requests()
    const validations = Array.from({ length: TOOLS }, (_, i) =>
      request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: `storm.${i}` } })
    )
    const during = await Promise.all([verify(), verify(), verify()])
    const answers = await Promise.all(validations)
    expect(answers.map((a) => a.status)).toEqual(Array(TOOLS).fill(200))
    for (const { status, ms } of during) {
      expect(status).toBe(200)
      expect(ms).toBeLessThan(1000)
    }
    expect(batch.pingAnswers()).toBe(0)
    expect(batch.requests() - before).toBeLessThanOrEqual(TOOLS * PROBE_REQUEST_BOUND)
  })
})

describe("registering an MCP server whose tool name is too long", () => {
  test("that tool is skipped with its reason; the registration is answered, never a 500", async () => {
    const server = await startServer(testConfig({ probes: { ...config.probes } }))
    try {
      const { status, body } = await request(`${server.url}/v1/resources/register`, {
        method: "POST",
        json: { url: stream.url("/plain/register"), type: "mcp" }
      })
      expect(status).toBe(200)
      const routes = body.routes as ReadonlyArray<{ outcome: string; toolName?: string; detail: string | null }>
      expect(routes.map((r) => r.outcome)).toContain("skipped")
      expect(routes.find((r) => r.outcome === "skipped")?.detail).toContain("1-200 characters")
      expect(routes.find((r) => r.toolName === "plain")).toBeDefined()
      // The same listing in a batch of pings: the registration reports it, and answers no ping.
      const answers = batch.pingAnswers()
      const stormed = await request(`${server.url}/v1/resources/register`, {
        method: "POST",
        json: { url: batch.url("/batch/register"), type: "mcp" }
      })
      expect(stormed.status).toBe(200)
      expect(stormed.body.documents[0].detail).toContain("batch")
      await Bun.sleep(300)
      expect(batch.pingAnswers() - answers).toBe(0)
    } finally {
      await server.close()
    }
  })
})

describe("redirects", () => {
  it.live("a 307 in answer to tools/call is a failure, never a second send of the same call", () =>
    Effect.gen(function* () {
      const server = startMcpStorm({ pings: 0 })
      try {
        const { observation } = yield* observeMcp(
          target(server.url("/plain/moved"), "redirect"),
          config,
          mcpSessions(config)
        )
        expect(observation.outcome).toBe("unreachable")
        expect(server.calls()).toBe(1)
      } finally {
        server.stop()
      }
    })
  )
})

describe("sessions are bounded", () => {
  test("one tool failing retires the shared session without ending another tool's call in it", async () => {
    const server = startMcpStorm({ pings: 0 })
    try {
      const sessions = mcpSessions(config)
      const url = server.url("/plain/shared")
      // Both calls in one session: the slow one is in flight when the broken one fails.
      await it.run(observeMcp(target(url, "warm"), config, sessions))
      const [slow, broken] = await Promise.all([
        it.run(observeMcp(target(url, "slow"), config, sessions)),
        Bun.sleep(50).then(() => it.run(observeMcp(target(url, "broken"), config, sessions)))
      ])
      expect(broken.observation.outcome).toBe("unreachable")
      expect(slow.observation.outcome).toBe("executed_unpaid")
    } finally {
      server.stop()
    }
  })

  test(`2,000 MCP servers probed: at most ${MAX_MCP_SESSIONS} sessions stay open, and memory stays within the stated bound`, async () => {
    const cost = await probeMemory("legacy")
    console.log(
      `rss grew ${cost.rssGrownMb.toFixed(1)} MB, heap ${cost.heapGrownMb.toFixed(1)} MB over 2,000 MCP servers`
    )
    expect(cost.executed).toBe(2000)
    expect(cost.maxSessions).toBe(MAX_MCP_SESSIONS)
    expect(cost.rssGrownMb).toBeLessThan(MCP_RSS_BOUND_MB)
  }, 120_000)
})

describe("a 2026-07-28 server storming its client", () => {
  test("stateless probes and purchases keep the guards: a batch refused, pings dropped unanswered, discover and one call at most", async () => {
    const refused = await it.run(observeMcp(target(batch.url("/modern/batch/mcp")), config, mcpSessions(config)))
    expect(refused.observation.outcome).toBe("unreachable")
    expect(refused.observation.detail).toContain("batch")
    const dropped = await it.run(observeMcp(target(stream.url("/modern/sse/mcp")), config, mcpSessions(config)))
    expect(dropped.observation.outcome).toBe("executed_unpaid")
    const bought = await it.run(Effect.either(buyStorm("/modern/batch/buy")))
    expect(bought).toEqual(Either.left(expect.objectContaining({ _tag: "Unreachable" })))
    await Bun.sleep(300)
    expect(batch.pingAnswers() + stream.pingAnswers()).toBe(0)
    // A probe and a purchase of the batch server, a probe of the stream server: discover and the call each.
    // Counted per path: the service registered in an earlier test may probe these servers meanwhile.
    expect(batch.requestsTo("/modern/batch/mcp") + batch.requestsTo("/modern/batch/buy")).toBe(4)
    expect(stream.requestsTo("/modern/sse/mcp")).toBe(2)
  })
})

describe("2026-07-28 servers keep nothing", () => {
  test("2,000 MCP servers of 2026-07-28 probed: no session opened or kept, two requests each, memory within the stated bound", async () => {
    const cost = await probeMemory("modern")
    console.log(`rss grew ${cost.rssGrownMb.toFixed(1)} MB over 2,000 MCP servers of 2026-07-28`)
    expect(cost.executed).toBe(2000)
    expect(cost.maxSessions).toBe(0)
    // server/discover and tools/call: nothing else, no initialize.
    expect(cost.requests).toBe(2 * 2000)
    expect(cost.calls).toBe(2000)
    expect(cost.rssGrownMb).toBeLessThan(MCP_RSS_BOUND_MB)
  }, 120_000)
})

/** The bound docs/trust.md states for the growth of 2,000 MCP servers probed in one process (docs/performance.md has the measured figures). */
const MCP_RSS_BOUND_MB = 150

/**
 * 2,000 servers of one generation probed in a process of their own (`support/mcpProbeMemory.ts`):
 * the RSS of this test process carries whatever earlier test files left, which no bound can judge.
 */
const probeMemory = async (generation: "legacy" | "modern") => {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "support", "mcpProbeMemory.ts"), generation], {
    stdout: "pipe",
    stderr: "pipe"
  })
  const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  expect(code).toBe(0)
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}") as {
    readonly executed: number
    readonly maxSessions: number
    readonly requests: number
    readonly calls: number
    readonly rssGrownMb: number
    readonly heapGrownMb: number
  }
}
