import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import type { PaymentRequired } from "@x402/core/types"
import { Either } from "effect"
import { z } from "zod"
import { decodeCatalog, loadConfig } from "../src/config.js"
import type { VerticalServerShape } from "../src/vertical/VerticalServer.js"
import { PAYMENT_META, PAYMENT_RESPONSE_META, X402_MCP_EXTENSION } from "../src/x402/mcpAnswer.js"
import type { FixtureFacilitator } from "./fixtures/facilitator.js"
import { CLAW } from "./fixtures/stellarAssets.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { request, startServer, testConfig } from "./support/server.js"

const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const LooseResult = z.looseObject({})

let stack: Awaited<ReturnType<typeof startVerticalMcp>>
let fac: FixtureFacilitator
let vertical: VerticalServerShape
let mcpUrl: string

const connect = async (extension: boolean) => {
  const client = new Client(
    { name: "vertical-test", version: "1.0.0" },
    extension ? { capabilities: { extensions: { [X402_MCP_EXTENSION]: {} } } } : {}
  )
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))
  return client
}

const call = (client: Client, name: string, args: unknown, meta?: Record<string, unknown>) =>
  client.request(
    { method: "tools/call", params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } },
    LooseResult
  ) as Promise<Record<string, any>>

beforeAll(async () => {
  stack = await startVerticalMcp()
  ;({ vertical, fac, mcpUrl } = stack)
})

afterAll(async () => {
  await stack?.stop()
})

describe("the vertical as a paid MCP server to a 2025-11-25 client (official MCP SDK on both sides)", () => {
  test("four tools; unpaid calls ask the HTTP endpoint's price and payee through each binding", async () => {
    const http = await fetch(`${vertical.baseUrl}/inspect`, { method: "POST", body: JSON.stringify({ asset: CLAW }) })
    const httpChallenge = decodePaymentRequiredHeader(http.headers.get("payment-required")!)

    const plain = await connect(false)
    expect((await plain.listTools()).tools.map((t) => t.name)).toEqual([
      "inspect",
      "changes",
      "compliance",
      "eligibility"
    ])
    const viaResult = await call(plain, "inspect", { asset: CLAW })
    expect(viaResult.isError).toBe(true)
    expect(viaResult.structuredContent.accepts).toEqual(httpChallenge.accepts)
    expect(JSON.parse(viaResult.content[0].text)).toEqual(viaResult.structuredContent)

    // The extension binding needs a 2026-07-28 request that advertises it: a 2025-era client's
    // `initialize` capabilities never select it (verticalMcpPaid.test.ts covers the extension).
    const extended = await connect(true)
    const viaExtension = await call(extended, "inspect", { asset: CLAW })
    expect(viaExtension.resultType).toBeUndefined()
    expect(viaExtension.structuredContent.accepts).toEqual(httpChallenge.accepts)
    await plain.close()
    await extended.close()
  })

  test("a paid call settles once and answers the HTTP endpoint's data with the settlement in _meta", async () => {
    const client = await connect(false)
    const unpaid = await call(client, "inspect", { asset: CLAW })
    const required = unpaid.structuredContent as PaymentRequired
    const settlesBefore = fac.calls("/settle")
    const paid = await call(
      client,
      "inspect",
      { asset: CLAW },
      { [PAYMENT_META]: await buildExactPayment(required.accepts[0]!) }
    )
    expect(paid.isError).toBeFalsy()
    expect(paid._meta[PAYMENT_RESPONSE_META]).toMatchObject({ success: true, network: "stellar:testnet" })
    expect(fac.calls("/settle")).toBe(settlesBefore + 1)
    expect(paid.structuredContent).toMatchObject({ asset: expect.anything() })
    expect(JSON.parse(paid.content[0].text)).toEqual(paid.structuredContent)
    // A bad input with a payment is refused before the payment is verified: nothing settled.
    const refused = await call(
      client,
      "inspect",
      { asset: "not an asset" },
      { [PAYMENT_META]: await buildExactPayment(required.accepts[0]!) }
    )
    expect(refused.isError).toBe(true)
    expect(refused.content[0].text).toStartWith("INVALID_BODY:")
    expect(fac.calls("/settle")).toBe(settlesBefore + 1)
    await client.close()
  })

  test("Sextant's probe of a vertical MCP tool reaches PAYMENT_VERIFIED", async () => {
    const entry = defaults.catalog.find((e) => e.resource.id === "stellar-intel.rwa.inspect")!
    const catalog = Either.getOrThrow(
      decodeCatalog(
        [
          {
            ...entry,
            resource: {
              ...entry.resource,
              id: "stellar-intel.mcp.inspect",
              type: "mcp",
              url: mcpUrl,
              method: "POST",
              mcp: { toolName: "inspect", example: { asset: CLAW } }
            }
          }
        ],
        "catalog"
      )
    )
    const base = testConfig()
    const server = await startServer({ ...base, catalog, probes: { ...base.probes, allowPrivateTargets: true } })
    try {
      const { body } = await request(`${server.url}/v1/validate`, {
        method: "POST",
        json: { resourceId: "stellar-intel.mcp.inspect" }
      })
      expect(body).toMatchObject({ healthy: true, status: "PAYMENT_VERIFIED" })
      // The binding is the probe's generation's: the tool-result one over 2025-11-25, the extension over 2026-07-28.
      expect(body.observation.method).toMatch(/^tools\/call (tool-result|extension)$/)
      expect(body.observation).toMatchObject({
        payTo: entry.paymentOptions[0]!.payTo,
        amount: entry.paymentOptions[0]!.amount
      })
    } finally {
      await server.close()
    }
  })
})
