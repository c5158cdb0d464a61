import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Either } from "effect"
import { judgePaid } from "../src/client/outcome.js"
import { type Config, loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { McpKind } from "../src/domain/mcp.js"
import { canonicalize } from "../src/encoding/canonicalJson.js"
import { payForTool } from "../src/payments/payForTool.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { startLegacyFront } from "./fixtures/legacyFront.js"
import { QUOTE, startModernSeller } from "./fixtures/mcpGenerations.js"
import { CLAW } from "./fixtures/stellarAssets.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { writeBuyerConfig } from "./support/buyerConfig.js"
import { spawnedCli } from "./support/cliProcess.js"
import { it } from "./support/effectTest.js"
import { startServer } from "./support/server.js"

/**
 * Sextant's own buyer pays the vertical's paid MCP tool, resource and prompt over 2026-07-28 (the
 * vertical as it is: `server/discover` answered, the extension binding) and over 2025-11-25 (the
 * same vertical behind a front that refuses `server/discover`, so the buyer opens a session): one
 * settle each, through the fixture facilitator on the fixture ledger (real XDR), and through the
 * service (`sextant buy`) a receipt that verifies offline.
 */
const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const ledger = startFixtureLedger()
const fac = startFacilitator({ ledger })
const folder = mkdtempSync(join(tmpdir(), "sextant-buy-vertical-mcp-"))
const configFile = join(folder, "config.json")
const keyFile = join(folder, "buyer.key")
let stack: Awaited<ReturnType<typeof startVerticalMcp>>
/** The same vertical behind a 2025-era front, configured with the front as its public URL. */
let behind: Awaited<ReturnType<typeof startVerticalMcp>>
let front: ReturnType<typeof startLegacyFront>
let service: Awaited<ReturnType<typeof startServer>>

const GENERATIONS = ["2026", "2025"] as const
const SOLD: Record<
  McpKind,
  { readonly name: string; readonly arguments: Record<string, unknown>; readonly price: string }
> = {
  tool: { name: "inspect", arguments: { asset: CLAW }, price: defaults.vertical.prices.inspect },
  resource: {
    name: `rwa://stellar-intel/compliance?asset=${encodeURIComponent(CLAW)}`,
    arguments: {},
    price: defaults.vertical.prices.compliance
  },
  prompt: { name: "rwa_changes_review", arguments: { asset: CLAW }, price: defaults.vertical.prices.changes }
}
const KINDS = Object.keys(SOLD) as Array<McpKind>
const urlOf = (generation: (typeof GENERATIONS)[number]) => (generation === "2026" ? stack : behind).mcpUrl
const idOf = (generation: string, kind: string) => `vertical${generation}.${kind}`

const sextant = spawnedCli({ cwd: folder, configFile })

beforeAll(async () => {
  front = startLegacyFront()
  ;[stack, behind] = await Promise.all([startVerticalMcp({ fac }), startVerticalMcp({ fac, publicUrl: front.origin })])
  front.pass(behind.localOrigin)
  const entries = GENERATIONS.flatMap((generation) =>
    KINDS.map((kind) => ({
      resource: {
        id: idOf(generation, kind),
        type: "mcp",
        name: `the vertical's ${kind} over ${generation}`,
        description: "a paid MCP read of the vertical",
        url: urlOf(generation),
        capabilities: [`rwa.${generation}.${kind}`],
        mcp: { kind, toolName: SOLD[kind].name, example: SOLD[kind].arguments }
      },
      provider: { id: `vertical${generation}`, name: `vertical ${generation}` },
      paymentOptions: [
        {
          network: "stellar:testnet",
          scheme: "exact",
          asset: TESTNET_USDC,
          amount: SOLD[kind].price,
          amountUsd: Number(SOLD[kind].price) / 1e7,
          payTo: defaults.vertical.payTo
        }
      ]
    }))
  )
  // One capability from two providers: the vertical directly and behind its front.
  const fallback = GENERATIONS.map((generation) => ({
    ...entries.find((e) => e.resource.id === idOf(generation, "tool"))!,
    resource: {
      ...entries.find((e) => e.resource.id === idOf(generation, "tool"))!.resource,
      id: `fallback${generation}.tool`,
      capabilities: ["rwa.fallback"]
    },
    provider: { id: `fallback${generation}`, name: `fallback ${generation}` }
  }))
  writeBuyerConfig(configFile, folder, ledger, [...entries, ...fallback], {
    allowPrivateTargets: true,
    maxUsdPerWindow: 1,
    windowSeconds: 3600
  })
  const config: Config = Either.getOrThrow(loadConfig(configFile, {}))
  service = await startServer({ ...config, host: "127.0.0.1", port: 0 })
  expect((await sextant("keys", "buyer-new", "--key-file", keyFile)).code).toBe(0)
}, 120_000)

afterAll(async () => {
  await service?.close()
  await front?.stop()
  await Promise.all([stack?.stop(), behind?.stop()])
  await fac.stop()
  ledger.stop()
})

const buy = (
  generation: (typeof GENERATIONS)[number],
  kind: McpKind,
  at: { url: string; name: string; arguments: Record<string, unknown> } = { url: urlOf(generation), ...SOLD[kind] }
) =>
  Effect.either(
    payForTool({
      url: at.url,
      kind,
      toolName: at.name,
      arguments: at.arguments,
      signer: Keypair.random(),
      rpcUrl: ledger.rpcUrl,
      inclusionFeeStroops: 10_000,
      deployment: { network: defaults.network, assetContract: defaults.asset.assetContract },
      maxPrice: 1_000_000n,
      outbound: { ...defaults.buyer, allowPrivateTargets: true, timeoutMs: 10_000 }
    })
  )

describe("payForTool buys the vertical's tool, resource and prompt over both generations", () => {
  for (const generation of GENERATIONS) {
    for (const kind of KINDS) {
      it.live(
        `a ${kind} over ${generation}: one settle on the ledger, the data delivered with its settlement`,
        () =>
          Effect.gen(function* () {
            const settles = fac.calls("/settle")
            const refusedDiscovers = front.counts.discoversRefused
            const either = yield* buy(generation, kind)
            const answer = Either.getOrThrow(either)
            expect(fac.calls("/settle")).toBe(settles + 1)
            expect(answer).toMatchObject({
              amount: SOLD[kind].price,
              sends: 1,
              toolError: false,
              paymentResponse: { success: true }
            })
            expect(ledger.succeeded(answer.paymentResponse!.transaction)).toBe(true)
            expect(judgePaid(answer)._tag).toBe("Delivered")
            expect(answer.body!.toString("utf8")).toContain(
              kind === "prompt" ? "Review these changes findings" : "CLAW"
            )
            // The 2025 purchase went through the front: its discover refused, the rest in a session.
            expect(front.counts.discoversRefused).toBe(refusedDiscovers + (generation === "2025" ? 1 : 0))
          }),
        60_000
      )
    }
  }
})

describe("sextant buy buys the vertical's tool, resource and prompt over both generations, receipted by the service", () => {
  for (const generation of GENERATIONS) {
    for (const kind of KINDS) {
      test(`a ${kind} over ${generation}: probed as paid, one settle, a receipt that verifies offline`, async () => {
        const probed = await it.run(
          service.client.verification.validate({ payload: { resourceId: ResourceId.make(idOf(generation, kind)) } })
        )
        expect(probed.status).toBe("PAYMENT_VERIFIED")
        const receiptFile = join(folder, `receipt-${generation}-${kind}.json`)
        const settles = fac.calls("/settle")
        const run = await sextant(
          "buy",
          `rwa.${generation}.${kind}`,
          "--input",
          JSON.stringify(SOLD[kind].arguments),
          "--key-file",
          keyFile,
          "--service",
          service.url,
          "--max-usd",
          "0.1",
          "--receipt-file",
          receiptFile
        )
        expect(run.code).toBe(0)
        expect(fac.calls("/settle")).toBe(settles + 1)
        const result = JSON.parse(run.stdout)
        expect(result._meta["x402/payment-response"].success).toBe(true)
        const digest = createHash("sha256")
          .update(Either.getOrThrow(canonicalize(result)))
          .digest("hex")
        const receipt = JSON.parse(readFileSync(receiptFile, "utf8"))
        expect(receipt).toMatchObject({
          payment: { amount: SOLD[kind].price },
          response: { status: 200, bodySha256: digest }
        })
        expect((await sextant("receipt", "verify", receiptFile)).code).toBe(0)
      }, 60_000)
    }
  }
})

describe("a paid MCP answer that leaves the money's fate unknown is never a refusal", () => {
  afterEach(() => fac.setMode("succeed"))

  for (const mode of ["settleDown", "settlePending"] as const) {
    it.live(
      `the vertical in ${mode}: tool, resource and prompt are PaymentOutcomeUnknown, each sent once (the vertical offers no payment identifier)`,
      () =>
        Effect.gen(function* () {
          fac.setMode(mode)
          for (const generation of GENERATIONS) {
            for (const kind of KINDS) {
              const settles = fac.calls("/settle")
              const answer = yield* buy(generation, kind)
              expect([generation, kind, Either.isLeft(answer) ? answer.left._tag : "delivered"]).toEqual([
                generation,
                kind,
                "PaymentOutcomeUnknown"
              ])
              expect(
                Either.isLeft(answer) && (answer.left as { paymentIdentifier?: string }).paymentIdentifier
              ).toBeUndefined()
              expect(fac.calls("/settle")).toBeGreaterThan(settles)
            }
          }
        }),
      60_000
    )
  }

  test("a settle answered settlement_pending by a seller offering payment-identifier: resent with the same payment and identifier, still unknown", async () => {
    const seller = await startModernSeller(fac.url, { identified: true })
    try {
      fac.setMode("settlePending")
      const answer = await it.run(buy("2026", "tool", { url: seller.url, name: QUOTE.tool, arguments: {} }))
      expect(Either.isLeft(answer) && answer.left._tag).toBe("PaymentOutcomeUnknown")
      const unknown = Either.isLeft(answer) ? (answer.left as { reason: string; paymentIdentifier?: string }) : null
      expect(unknown?.paymentIdentifier).toEqual(expect.any(String))
      expect(unknown?.reason).toContain("settlement_pending")
      expect(unknown?.reason).toMatch(/sent [2-9] times with payment identifier/)
    } finally {
      await seller.stop()
    }
  }, 60_000)

  test("sextant buy stops at the unknown answer: the next provider of the capability is never tried", async () => {
    for (const generation of GENERATIONS) {
      const probed = await it.run(
        service.client.verification.validate({ payload: { resourceId: ResourceId.make(`fallback${generation}.tool`) } })
      )
      expect(probed.status).toBe("PAYMENT_VERIFIED")
    }
    fac.setMode("settleDown")
    const settles = fac.calls("/settle")
    const run = await sextant(
      "buy",
      "rwa.fallback",
      "--input",
      JSON.stringify(SOLD.tool.arguments),
      "--key-file",
      keyFile,
      "--service",
      service.url,
      "--max-usd",
      "0.1"
    )
    expect(run.code).not.toBe(0)
    const report = JSON.parse(run.stderr.trim().split("\n").at(-1) ?? "{}")
    expect(report.error).toBe("OUTCOME_UNKNOWN")
    expect(report.attempts).toEqual([expect.objectContaining({ outcome: "unknown" })])
    expect(fac.calls("/settle")).toBe(settles + 1)
  }, 60_000)
})
