import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { type Config, loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { canonicalize } from "../src/encoding/canonicalJson.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { type GenerationSeller, QUOTE, startLegacySeller, startModernSeller } from "./fixtures/mcpGenerations.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO } from "./fixtures/x402Terms.js"
import { writeBuyerConfig } from "./support/buyerConfig.js"
import { buySummary, spawnedCli } from "./support/cliProcess.js"
import { it } from "./support/effectTest.js"
import { startServer } from "./support/server.js"

/**
 * `sextant buy` (its own process) pays an MCP tool, resource and prompt of a 2026-07-28 seller
 * (the official v2 SDK) and of a 2025-11-25 seller (the official 1.x SDK), routed and receipted by
 * the service, settled through the fixture facilitator on the fixture ledger: one settle each, and
 * a receipt over the result that verifies offline.
 */
const KINDS = ["tool", "resource", "prompt"] as const
const GENERATIONS = ["2026", "2025"] as const

const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
const folder = mkdtempSync(join(tmpdir(), "sextant-buy-mcp-kinds-"))
const configFile = join(folder, "config.json")
const keyFile = join(folder, "buyer.key")
let sellers: Record<(typeof GENERATIONS)[number], GenerationSeller>
let service: Awaited<ReturnType<typeof startServer>>
let config: Config

const sextant = spawnedCli({ cwd: folder, configFile })

const idOf = (generation: string, kind: string) => `mcp${generation}.${kind}`

beforeAll(async () => {
  const [modern, legacy] = await Promise.all([startModernSeller(facilitator.url), startLegacySeller(facilitator.url)])
  sellers = { "2026": modern, "2025": legacy }
  const entries = GENERATIONS.flatMap((generation) =>
    KINDS.map((kind) => ({
      resource: {
        id: idOf(generation, kind),
        type: "mcp",
        name: `a ${kind} of a ${generation} seller`,
        description: "a paid MCP read",
        url: sellers[generation].url,
        capabilities: [`quote.${generation}.${kind}`],
        mcp: { kind, toolName: QUOTE[kind] }
      },
      provider: { id: `seller${generation}`, name: `seller ${generation}` },
      paymentOptions: [
        {
          network: "stellar:testnet",
          scheme: "exact",
          asset: TESTNET_USDC,
          amount: FIXTURE_AMOUNT,
          amountUsd: Number(FIXTURE_AMOUNT) / 1e7,
          payTo: FIXTURE_PAY_TO
        }
      ]
    }))
  )
  writeBuyerConfig(configFile, folder, ledger, entries, {
    allowPrivateTargets: true,
    maxUsdPerWindow: 1,
    windowSeconds: 3600
  })
  config = Either.getOrThrow(loadConfig(configFile, {}))
  service = await startServer({ ...config, host: "127.0.0.1", port: 0 })
  for (const generation of GENERATIONS) {
    for (const kind of KINDS) {
      const probed = await it.run(
        service.client.verification.validate({ payload: { resourceId: ResourceId.make(idOf(generation, kind)) } })
      )
      expect(probed.status).toBe("PAYMENT_VERIFIED")
    }
  }
  expect((await sextant("keys", "buyer-new", "--key-file", keyFile)).code).toBe(0)
}, 120_000)

afterAll(async () => {
  await service?.close()
  await Promise.all([sellers?.["2026"]?.stop(), sellers?.["2025"]?.stop()])
  await facilitator.stop()
  ledger.stop()
})

describe("sextant buy pays every MCP kind over both generations", () => {
  for (const generation of GENERATIONS) {
    for (const kind of KINDS) {
      test(`a ${kind} of a ${generation} seller: one settle, the result on stdout, a receipt that verifies offline`, async () => {
        const receiptFile = join(folder, `receipt-${generation}-${kind}.json`)
        const settles = facilitator.calls("/settle")
        const run = await sextant(
          "buy",
          `quote.${generation}.${kind}`,
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
        const result = JSON.parse(run.stdout)
        const digest = createHash("sha256")
          .update(Either.getOrThrow(canonicalize(result)))
          .digest("hex")
        expect(result._meta["x402/payment-response"].success).toBe(true)
        expect(facilitator.calls("/settle")).toBe(settles + 1)
        const summary = buySummary(run)
        expect(summary.attempts).toEqual([
          expect.objectContaining({ resourceId: idOf(generation, kind), outcome: "paid", amount: FIXTURE_AMOUNT })
        ])
        const receipt = JSON.parse(readFileSync(receiptFile, "utf8"))
        expect(receipt).toMatchObject({
          payment: { amount: FIXTURE_AMOUNT },
          response: { status: 200, bodySha256: digest }
        })
        expect((await sextant("receipt", "verify", receiptFile)).code).toBe(0)
      }, 60_000)
    }
  }

  test("the 2026-07-28 seller saw no initialize and no session through all of it", () => {
    expect(sellers["2026"].counts).toEqual({ initializes: 0, sessionRequests: 0 })
  })
})
