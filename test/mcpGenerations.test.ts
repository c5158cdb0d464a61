import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Either, Schema } from "effect"
import { judgePaid } from "../src/client/outcome.js"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { McpKind } from "../src/domain/mcp.js"
import { ResourcePaymentOption } from "../src/domain/resources.js"
import { payForTool } from "../src/payments/payForTool.js"
import { listMcpTools, observeMcp } from "../src/verification/mcpProbe.js"
import { mcpSessions } from "../src/verification/mcpSessions.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { type GenerationSeller, QUOTE, startLegacySeller, startModernSeller } from "./fixtures/mcpGenerations.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "./fixtures/x402Terms.js"
import { it } from "./support/effectTest.js"

/**
 * Both MCP generations, probed and bought: a 2026-07-28 seller (the official v2 SDK, stateless)
 * and a 2025-11-25 seller (the official 1.x SDK, sessions), each selling a tool, a resource and a
 * prompt that verify and settle through the fixture facilitator on the fixture ledger.
 */
const config = Either.getOrThrow(loadConfig(undefined, {}))
const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
let modern: GenerationSeller
let legacy: GenerationSeller
let toolResultOnly: GenerationSeller

beforeAll(async () => {
  ;[modern, legacy, toolResultOnly] = await Promise.all([
    startModernSeller(facilitator.url),
    startLegacySeller(facilitator.url),
    startLegacySeller(facilitator.url, false)
  ])
})

afterAll(async () => {
  await Promise.all([modern?.stop(), legacy?.stop(), toolResultOnly?.stop()])
  await facilitator.stop()
  ledger.stop()
})

const buy = (at: GenerationSeller, kind: McpKind, paidTimeoutMs?: number) =>
  Effect.either(
    payForTool({
      ...(paidTimeoutMs === undefined ? {} : { paidTimeoutMs }),
      url: at.url,
      kind,
      toolName: QUOTE[kind],
      arguments: {},
      signer: Keypair.random(),
      rpcUrl: ledger.rpcUrl,
      inclusionFeeStroops: 10_000,
      deployment: { network: config.network, assetContract: config.asset.assetContract },
      maxPrice: 1_000_000n,
      outbound: { ...config.buyer, allowPrivateTargets: true, timeoutMs: 5_000 }
    })
  )

const option = Schema.decodeUnknownSync(ResourcePaymentOption)({
  network: "stellar:testnet",
  scheme: "exact",
  asset: TESTNET_USDC,
  amount: FIXTURE_AMOUNT,
  amountUsd: Number(FIXTURE_AMOUNT) / 1e7,
  payTo: FIXTURE_PAY_TO
})

const probeConfig = {
  ...config,
  probes: { ...config.probes, allowPrivateTargets: true, timeoutMs: 5_000, intervalSeconds: 300 }
}

const probe = (at: GenerationSeller, kind: McpKind, sessions: ReturnType<typeof mcpSessions>) =>
  observeMcp(
    {
      resourceId: ResourceId.make(`mcp.${kind}`),
      url: at.url,
      method: "POST",
      advertised: [option],
      mcp: { kind, toolName: QUOTE[kind], transport: "streamable-http" }
    },
    probeConfig,
    sessions
  )

describe("buying each kind over each generation", () => {
  for (const [generation, seller] of [
    ["2026-07-28", () => modern],
    ["2025-11-25", () => legacy]
  ] as const) {
    for (const kind of ["tool", "resource", "prompt"] as const) {
      it.live(
        `a ${kind} of a ${generation} seller: paid once, one settle, the result delivered`,
        () =>
          Effect.gen(function* () {
            const at = seller()
            const [settles, facilitatorSettles] = [at.settles.count, facilitator.calls("/settle")]
            const paid = Either.getOrThrow(yield* buy(at, kind))
            expect(paid).toMatchObject({
              amount: FIXTURE_AMOUNT,
              toolError: false,
              sends: 1,
              paymentResponse: { success: true }
            })
            expect(paid.paymentResponse?.transaction).toMatch(/^[0-9a-f]{64}$/)
            expect(judgePaid(paid)._tag).toBe("Delivered")
            expect(JSON.parse(paid.body!.toString("utf8"))).toMatchObject(
              kind === "tool"
                ? { structuredContent: { quote: 42 } }
                : kind === "resource"
                  ? { contents: [{ uri: QUOTE.resource }] }
                  : { messages: [expect.anything()] }
            )
            expect(at.settles.count).toBe(settles + 1)
            expect(facilitator.calls("/settle")).toBe(facilitatorSettles + 1)
          }),
        60_000
      )
    }
  }

  test("a 2026-07-28 purchase opens no session: no initialize, no Mcp-Session-Id", () => {
    expect(modern.counts).toEqual({ initializes: 0, sessionRequests: 0 })
  })

  it.live(
    "a 2025 seller that knows only the tool-result binding is paid for its tool the same way",
    () =>
      Effect.gen(function* () {
        const paid = Either.getOrThrow(yield* buy(toolResultOnly, "tool"))
        expect(paid).toMatchObject({ toolError: false, paymentResponse: { success: true } })
        expect(toolResultOnly.settles.count).toBe(1)
      }),
    60_000
  )
})

describe("the resend rule over 2026-07-28", () => {
  test("a paid read that got no answer is resent with the same payment and identifier; the seller answers its one settlement", async () => {
    const dropping = await startModernSeller(facilitator.url, { identified: true, dropFirstPaid: true })
    try {
      const settles = facilitator.calls("/settle")
      const paid = Either.getOrThrow(await it.run(buy(dropping, "resource", 1_500)))
      expect(paid).toMatchObject({ sends: 2, toolError: false, paymentResponse: { success: true } })
      expect(paid.paymentIdentifier).toEqual(expect.any(String))
      expect(dropping.settles.count).toBe(1)
      expect(facilitator.calls("/settle")).toBe(settles + 1)
    } finally {
      await dropping.stop()
    }
  }, 60_000)
})

describe("probing each generation", () => {
  it.live(
    "probes of a 2026-07-28 seller: stateless, no initialize, nothing kept; each kind's challenge read",
    () =>
      Effect.gen(function* () {
        const sessions = mcpSessions(probeConfig)
        const before = { ...modern.counts }
        for (const kind of ["tool", "resource", "prompt"] as const) {
          const observed = yield* probe(modern, kind, sessions)
          expect(observed.observation).toMatchObject({
            outcome: "healthy",
            method: `${kind === "tool" ? "tools/call" : kind === "resource" ? "resources/read" : "prompts/get"} extension`
          })
        }
        expect(modern.counts).toEqual(before)
        expect(modern.counts.initializes).toBe(0)
        expect(sessions.size()).toBe(0)
      }),
    60_000
  )

  test("probes of a 2025 seller within one interval: one initialize, the session reused", async () => {
    const sessions = mcpSessions(probeConfig)
    const before = legacy.counts.initializes
    for (const kind of ["tool", "resource", "prompt", "tool"] as const) {
      const observed = await it.run(probe(legacy, kind, sessions))
      expect(observed.observation.outcome).toBe("healthy")
    }
    expect(legacy.counts.initializes).toBe(before + 1)
    expect(sessions.size()).toBe(1)
    await sessions.closeAll()
  }, 60_000)
})

describe("registration of each generation", () => {
  it.live(
    "a 2026-07-28 server's tools are listed statelessly; a 2025 server's in a session",
    () =>
      Effect.gen(function* () {
        const before = { modern: { ...modern.counts }, legacy: legacy.counts.initializes }
        const outbound = { ...probeConfig.probes }
        expect((yield* listMcpTools(modern.url, outbound)).map((t) => t.name)).toEqual([QUOTE.tool])
        expect(modern.counts).toEqual(before.modern)
        yield* listMcpTools(legacy.url, outbound)
        expect(legacy.counts.initializes).toBe(before.legacy + 1)
      }),
    60_000
  )
})
