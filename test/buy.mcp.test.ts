import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { Keypair } from "@stellar/stellar-sdk"
import { Either } from "effect"
import { loadConfig } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { loadOrCreateBuyerKey } from "../src/keys/stellarKey.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { settledCredentialForms } from "./fixtures/stellarPayment.js"
import { writeBuyerConfig } from "./support/buyerConfig.js"
import { it } from "./support/effectTest.js"
import { startServer } from "./support/server.js"

const PAYEE = Keypair.random().publicKey()
const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
// A GET resource: the buyer's input travels as query parameters.
const seller = startPaidResource({ payTo: PAYEE, amount: "10000", capability: "demo.mcp" })

const folder = mkdtempSync(join(tmpdir(), "sextant-buy-mcp-"))
const configPath = join(folder, "config.json")
const keyFile = join(folder, "buyer.key")
let http: Awaited<ReturnType<typeof startServer>>
const clients: Array<Client> = []

type ToolAnswer = { structuredContent?: any; isError?: boolean; content: Array<{ type: string; text: string }> }

/** An MCP SDK client of `sextant mcp` on stdio, sharing the HTTP server's store. */
const connect = async (...extra: Array<string>) => {
  const client = new Client({ name: "sextant-buyer-test", version: "1.0.0" })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ["src/main.ts", "mcp", "--config", configPath, ...extra],
      stderr: "ignore"
    })
  )
  clients.push(client)
  return client
}

beforeAll(async () => {
  await seller.useFacilitator(facilitator.url)
  writeBuyerConfig(configPath, folder, ledger, [seller.catalogEntry("seller.mcp")], {
    allowPrivateTargets: true,
    maxUsdPerWindow: 1
  })
  http = await startServer({ ...Either.getOrThrow(loadConfig(configPath, {})), host: "127.0.0.1", port: 0 })
  const probed = await it.run(
    http.client.verification.validate({ payload: { resourceId: ResourceId.make("seller.mcp") } })
  )
  expect(probed.status).toBe("PAYMENT_VERIFIED")
  await it.run(loadOrCreateBuyerKey(keyFile))
}, 30_000)

afterAll(async () => {
  for (const client of clients) await client.close()
  await http?.close()
  await seller.stop()
  await facilitator.stop()
  ledger.stop()
})

describe("MCP buyer mode", () => {
  test("without a buyer key file buy_resource is absent", async () => {
    const client = await connect()
    const names = (await client.listTools()).tools.map((t) => t.name)
    expect(names).not.toContain("buy_resource")
    expect(names).toContain("route_resource")
  }, 30_000)

  test("with one, the MCP SDK client buys: data plus a signed receipt; the session cap then refuses a second purchase unsigned", async () => {
    // Room for one 0.001 purchase in this session, not two.
    const client = await connect("--buyer-key-file", keyFile, "--session-cap-usd", "0.0015")
    const tools = (await client.listTools()).tools
    expect(tools.find((t) => t.name === "buy_resource")?.description).toContain("0.0015 USD")

    const bought = (await client.callTool({
      name: "buy_resource",
      arguments: { capability: "demo.mcp", input: { symbol: "USDC" }, maxUsd: 0.01 }
    })) as ToolAnswer
    expect(bought.isError).toBeFalsy()
    const result = bought.structuredContent
    // Read before any toMatchObject: bun's matcher writes its asymmetric matchers into the received object.
    const { receiptId } = result.receipt
    expect(receiptId).toMatch(/^rcpt_/)
    const transactionHash = result.paid.transactionHash
    expect(transactionHash).toMatch(/^[0-9a-f]{64}$/)
    expect(result.data).toEqual({ data: "paid content", input: { query: { symbol: "USDC" } } })
    expect(result.receipt).toMatchObject({
      receiptId,
      service: { resourceId: "seller.mcp", payTo: PAYEE },
      payment: { amount: "10000", transactionHash },
      signatureAlgorithm: "ed25519"
    })
    expect(result.paid).toMatchObject({ amount: "10000", payTo: PAYEE, transactionHash })
    expect(result.attempts).toEqual([expect.objectContaining({ resourceId: "seller.mcp", outcome: "paid" })])
    // The receipt is the service's: it verifies there too.
    const verified = await it.run(http.client.receipts.verify({ path: { id: receiptId } }))
    expect(verified.valid).toBe(true)
    expect(facilitator.calls("/settle")).toBe(1)
    expect(settledCredentialForms(facilitator.requests)).toEqual(["addressV2"])

    const again = (await client.callTool({
      name: "buy_resource",
      arguments: { capability: "demo.mcp", maxUsd: 0.01 }
    })) as ToolAnswer
    expect(again.isError).toBe(true)
    expect(again.content[0]?.text).toContain("SPEND_LIMIT_REACHED")
    expect(again.content[0]?.text).toContain('"outcome": "over_budget"')
    expect(facilitator.calls("/settle")).toBe(1)
  }, 30_000)

  test("a bad buyer key file stops the MCP server at start", async () => {
    const child = Bun.spawn(
      [process.execPath, "src/main.ts", "mcp", "--config", configPath, "--buyer-key-file", join(folder, "absent.key")],
      {
        stdin: "pipe",
        stderr: "pipe",
        stdout: "pipe"
      }
    )
    expect(await child.exited).toBe(2)
    expect(await new Response(child.stderr).text()).toContain("create it with sextant keys buyer-new")
  }, 30_000)
})
