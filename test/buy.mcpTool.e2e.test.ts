import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Either } from "effect"
import { ServicesLive } from "../src/app.js"
import { type Config, loadConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { EconomicProber } from "../src/economic/EconomicProber.js"
import { canonicalize } from "../src/encoding/canonicalJson.js"
import { payForTool } from "../src/payments/payForTool.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { CLAW } from "./fixtures/stellarAssets.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { writeBuyerConfig } from "./support/buyerConfig.js"
import { buySummary, SEXTANT_MAIN, spawnedCli } from "./support/cliProcess.js"
import { it, runWith } from "./support/effectTest.js"
import { startServer } from "./support/server.js"

/**
 * Buying an MCP tool end to end on loopback: the reference vertical's `inspect` tool (the official
 * MCP SDK server, tool-result and extension bindings) settling through a fixture facilitator on the
 * fixture ledger; Sextant's service routing and receipting it; the buyer as `sextant buy` (its own
 * process), as `buy_resource` of `sextant mcp` (the MCP SDK client over stdio), and the economic
 * probe paying the same tool.
 */
const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const inspect = defaults.catalog.find((e) => e.resource.id === "stellar-intel.rwa.inspect")!
const option = inspect.paymentOptions[0]!
const capability = inspect.resource.capabilities[0]!

const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })

const folder = mkdtempSync(join(tmpdir(), "sextant-buy-tool-"))
const configFile = join(folder, "config.json")
const keyFile = join(folder, "buyer.key")
const receiptFile = join(folder, "receipt.json")
let vertical: Awaited<ReturnType<typeof startVerticalMcp>>
let service: Awaited<ReturnType<typeof startServer>>
let mcpUrl: string
let config: Config

const sextant = spawnedCli({ cwd: folder, configFile })

const buy = async (...args: Array<string>) => {
  const run = await sextant(
    "buy",
    capability,
    "--input",
    JSON.stringify({ asset: CLAW }),
    "--key-file",
    keyFile,
    "--service",
    service.url,
    ...args
  )
  return { ...run, summary: buySummary(run) }
}

const paidCalls = () => facilitator.calls("/settle") + facilitator.calls("/verify")

beforeAll(async () => {
  vertical = await startVerticalMcp({ fac: facilitator })
  mcpUrl = vertical.mcpUrl
  const entry = {
    resource: {
      ...inspect.resource,
      id: "intel.mcp.inspect",
      type: "mcp",
      url: mcpUrl,
      method: "POST",
      mcp: { toolName: "inspect", example: { asset: CLAW } }
    },
    provider: inspect.provider,
    paymentOptions: inspect.paymentOptions
  }
  // Room for exactly one purchase at the tool's price.
  writeBuyerConfig(configFile, folder, ledger, [entry], {
    allowPrivateTargets: true,
    maxUsdPerWindow: option.amountUsd * 1.5,
    windowSeconds: 3600
  })
  config = Either.getOrThrow(loadConfig(configFile, {}))
  service = await startServer({ ...config, host: "127.0.0.1", port: 0 })
  const probed = await it.run(
    service.client.verification.validate({ payload: { resourceId: ResourceId.make("intel.mcp.inspect") } })
  )
  expect(probed.status).toBe("PAYMENT_VERIFIED")
  expect((await sextant("keys", "buyer-new", "--key-file", keyFile)).code).toBe(0)
}, 60_000)

afterAll(async () => {
  await service?.close()
  await vertical?.stop()
  await facilitator.stop()
  ledger.stop()
})

describe("buying an MCP tool", () => {
  test("sextant buy pays the vertical's tool once: the tool result on stdout, a receipt over it that verifies offline", async () => {
    const settles = facilitator.calls("/settle")
    const { code, stdout, summary } = await buy("--max-usd", "0.1", "--receipt-file", receiptFile)
    expect(code).toBe(0)
    const result = JSON.parse(stdout)
    // Read before any toMatchObject: bun's matcher writes its asymmetric matchers into the received object.
    // The digest covers the tool result's canonical JSON.
    const digest = createHash("sha256")
      .update(Either.getOrThrow(canonicalize(result)))
      .digest("hex")
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toMatchObject({ asset: expect.anything() })
    expect(result._meta["x402/payment-response"]).toMatchObject({ success: true })
    expect(facilitator.calls("/settle")).toBe(settles + 1)
    const { receiptId } = summary
    const transactionHash = summary.paid.transactionHash
    expect(transactionHash).toMatch(/^[0-9a-f]{64}$/)
    expect(summary.attempts).toEqual([
      expect.objectContaining({ resourceId: "intel.mcp.inspect", outcome: "paid", amount: option.amount })
    ])
    const receipt = JSON.parse(readFileSync(receiptFile, "utf8"))
    expect(receipt).toMatchObject({
      receiptId,
      payment: { amount: option.amount, transactionHash },
      response: { status: 200, bodySha256: digest }
    })
    expect((await sextant("receipt", "verify", receiptFile)).code).toBe(0)
  }, 60_000)

  test("a second purchase over the spend window signs nothing: exit 6, the facilitator hears nothing", async () => {
    const before = paidCalls()
    const { code, stdout, summary } = await buy("--max-usd", "0.1")
    expect(code).toBe(6)
    expect(stdout).toBe("")
    expect(summary.error).toBe("SPEND_LIMIT_REACHED")
    expect(summary.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(["over_budget"])
    expect(paidCalls()).toBe(before)
  }, 60_000)

  test("a challenge over the price limit, or with a refused payee, is never signed", async () => {
    const before = paidCalls()
    const pay = (maxPrice: bigint, refuse?: () => string, toolName = "inspect") =>
      it.run(
        Effect.either(
          payForTool({
            url: mcpUrl,
            toolName,
            arguments: { asset: CLAW },
            signer: Keypair.random(),
            rpcUrl: ledger.rpcUrl,
            inclusionFeeStroops: 10_000,
            deployment: { network: config.network, assetContract: config.asset.assetContract },
            maxPrice,
            ...(refuse ? { refuse } : {}),
            outbound: config.buyer
          })
        )
      )
    expect(await pay(BigInt(option.amount) - 1n)).toEqual(
      Either.left(expect.objectContaining({ _tag: "PriceAboveLimit", cheapest: option.amount }))
    )
    expect(await pay(BigInt(option.amount), () => "not the routed payee")).toEqual(
      Either.left(expect.objectContaining({ _tag: "NoAcceptableOption" }))
    )
    // A tool that is not the vertical's answers a JSON-RPC error: nothing to pay.
    const unknown = await pay(1_000_000n, undefined, "no-such-tool")
    expect(unknown).toEqual(Either.left(expect.objectContaining({ _tag: "NoPaymentRequired" })))
    expect(paidCalls()).toBe(before)
  }, 60_000)

  test("buy_resource of sextant mcp pays the tool", async () => {
    // A fresh key: its own spend window.
    const fresh = join(folder, "mcp-buyer.key")
    expect((await sextant("keys", "buyer-new", "--key-file", fresh)).code).toBe(0)
    const client = new Client({ name: "sextant-buyer-test", version: "1.0.0" })
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [SEXTANT_MAIN, "mcp", "--config", configFile, "--buyer-key-file", fresh, "--session-cap-usd", "0.1"],
        stderr: "ignore"
      })
    )
    try {
      const settles = facilitator.calls("/settle")
      const bought = (await client.callTool({
        name: "buy_resource",
        arguments: { capability, input: { asset: CLAW }, maxUsd: 0.1 }
      })) as {
        isError?: boolean
        structuredContent: any
      }
      expect(bought.isError).toBeFalsy()
      const { receiptId } = bought.structuredContent.receipt
      expect(receiptId).toMatch(/^rcpt_/)
      expect(bought.structuredContent.data.structuredContent).toMatchObject({ asset: expect.anything() })
      expect(bought.structuredContent.attempts).toEqual([
        expect.objectContaining({ resourceId: "intel.mcp.inspect", outcome: "paid" })
      ])
      expect(facilitator.calls("/settle")).toBe(settles + 1)
    } finally {
      await client.close()
    }
  }, 60_000)

  test("an economic probe pays the MCP tool once", async () => {
    const settles = facilitator.calls("/settle")
    const economic = ServicesLive(
      {
        ...config,
        database: join(folder, "economic.db"),
        economicProbes: {
          ...config.economicProbes,
          enabled: true,
          payerKeyFile: join(folder, "probe.key"),
          maxPriceUsd: 0.1,
          budgetUsdPerDay: option.amountUsd * 1.5,
          minObservations: 1
        }
      },
      "server"
    )
    const report = await runWith(
      economic,
      Effect.gen(function* () {
        const probed = yield* (yield* Prober).probeResource(ResourceId.make("intel.mcp.inspect"))
        expect(probed.status).toBe("PAYMENT_VERIFIED")
        return yield* (yield* EconomicProber).runCycle
      })
    )
    expect(report.paid).toEqual<unknown>([
      { resourceId: "intel.mcp.inspect", transaction: expect.stringMatching(/^[0-9a-f]{64}$/), success: true }
    ])
    expect(facilitator.calls("/settle")).toBe(settles + 1)
  }, 60_000)
})
