import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Either } from "effect"
import { readItem } from "../src/catalog/bazaarItems.js"
import { checkCatalog, decodeCatalog } from "../src/config.js"
import { mcpFieldsRefusal, readMcpTool } from "../src/domain/mcp.js"
import { readBazaar } from "../src/extensions/bazaar.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

const TESTNET_USDC = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"
const INPUT_SCHEMA = { type: "object", properties: { address: { type: "string" } }, required: ["address"] }
const EXAMPLE = { address: "GABC" }

const option = {
  network: "stellar:testnet",
  scheme: "exact",
  asset: TESTNET_USDC,
  amount: "10000",
  amountUsd: 0.001,
  payTo: FIXTURE_PAY_TO
}
const mcpEntry = (id: string, mcp: unknown) => ({
  resource: {
    id,
    type: "mcp",
    name: `tool ${id}`,
    description: "an MCP tool",
    url: "http://127.0.0.1:9/mcp",
    capabilities: ["stellar.inspect"],
    ...(mcp === undefined ? {} : { mcp })
  },
  provider: { id: "mcp-seller", name: "MCP seller" },
  paymentOptions: [option]
})

describe("the MCP fields (pure)", () => {
  test("toolName (or the older tool), transport defaulting to streamable-http, object schema and example", () => {
    expect(readMcpTool({ toolName: "inspect", inputSchema: INPUT_SCHEMA, example: EXAMPLE })).toEqual(
      Either.right({
        kind: "tool",
        toolName: "inspect",
        transport: "streamable-http",
        inputSchema: INPUT_SCHEMA,
        example: EXAMPLE
      })
    )
    expect(readMcpTool({ tool: "inspect", transport: "sse", example: "not an object" })).toEqual(
      Either.right({ kind: "tool", toolName: "inspect", transport: "sse" })
    )
    expect(Either.isLeft(readMcpTool({ inputSchema: INPUT_SCHEMA }))).toBe(true)
    expect(Either.isLeft(readMcpTool({ toolName: "inspect", transport: "websocket" }))).toBe(true)
  })

  test("an mcp resource needs its tool and an http one may not have one", () => {
    expect(mcpFieldsRefusal({ type: "mcp" })).toContain("toolName")
    expect(
      mcpFieldsRefusal({ type: "http", mcp: { kind: "tool", toolName: "x", transport: "streamable-http" } })
    ).toContain("only for resources of type mcp")
    expect(
      mcpFieldsRefusal({ type: "mcp", mcp: { kind: "tool", toolName: "x", transport: "streamable-http" } })
    ).toBeNull()
    const decoded = Either.getOrThrow(decodeCatalog([mcpEntry("no-tool", undefined)], "catalog"))
    expect(checkCatalog(decoded, 7)?.line).toBe(
      "config error: catalog[0].resource.mcp: an mcp resource needs resource.mcp.toolName"
    )
  })

  test("the bazaar extension's info.input carries the tool into the entry, one id per tool of a server", () => {
    const paid = (toolName: string) =>
      readBazaar(
        {
          paymentPayload: {
            resource: { url: "http://127.0.0.1:9/mcp" },
            extensions: {
              bazaar: {
                info: { input: { type: "mcp", toolName, inputSchema: INPUT_SCHEMA, example: EXAMPLE } },
                schema: { type: "object" }
              }
            }
          },
          paymentRequirements: {
            scheme: "exact",
            network: "stellar:testnet",
            asset: TESTNET_USDC,
            amount: "10000",
            payTo: FIXTURE_PAY_TO
          }
        },
        testConfig().asset
      )
    const inspect = paid("inspect")
    const changes = paid("changes")
    if (inspect._tag !== "Accepted" || changes._tag !== "Accepted") throw new Error("expected both accepted")
    expect(inspect.entry.resource).toMatchObject({
      type: "mcp",
      name: "inspect",
      mcp: { toolName: "inspect", transport: "streamable-http", inputSchema: INPUT_SCHEMA, example: EXAMPLE }
    })
    expect(inspect.entry.resource.id).not.toBe(changes.entry.resource.id)
  })

  test("a Bazaar MCP item keeps its tool fields, from the item or its extension", () => {
    const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC, decimals: 7, networks: undefined }
    const accepts = [
      {
        scheme: "exact",
        network: "stellar:testnet",
        amount: "10000",
        asset: TESTNET_USDC,
        payTo: FIXTURE_PAY_TO,
        maxTimeoutSeconds: 60
      }
    ]
    const flat = readItem(
      {
        resource: "https://tools.example/mcp",
        type: "mcp",
        x402Version: 2,
        accepts,
        toolName: "inspect",
        transport: "streamable-http",
        inputSchema: INPUT_SCHEMA
      },
      "s",
      deployment
    )
    const nested = readItem(
      {
        resource: "https://tools.example/mcp",
        type: "mcp",
        x402Version: 2,
        accepts,
        extensions: { bazaar: { info: { input: { type: "mcp", toolName: "changes" } } } }
      },
      "s",
      deployment
    )
    const none = readItem(
      { resource: "https://tools.example/mcp", type: "mcp", x402Version: 2, accepts },
      "s",
      deployment
    )
    if (flat._tag !== "Kept" || nested._tag !== "Kept") throw new Error("expected both kept")
    expect(flat.entry.resource.mcp).toEqual({
      kind: "tool",
      toolName: "inspect",
      transport: "streamable-http",
      inputSchema: INPUT_SCHEMA
    })
    expect(nested.entry.resource.mcp?.toolName).toBe("changes")
    expect(flat.entry.resource.id).not.toBe(nested.entry.resource.id)
    expect(none).toEqual({ _tag: "Invalid", reason: "toolName is required for an MCP tool" })
  })
})

describe("an mcp resource in the catalog, stored and shown", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  const tool = { toolName: "inspect", transport: "streamable-http", inputSchema: INPUT_SCHEMA, example: EXAMPLE }

  beforeAll(async () => {
    const catalog = Either.getOrThrow(decodeCatalog([mcpEntry("mcp.inspect", tool)], "catalog"))
    server = await startServer(testConfig({ catalog }))
  })
  afterAll(async () => server?.close())

  test("/v1/resources/{id} answers resource.mcp as the catalog file gave it", async () => {
    const { status, body } = await request(`${server.url}/v1/resources/mcp.inspect`)
    expect(status).toBe(200)
    expect(body.resource).toMatchObject({ type: "mcp", url: "http://127.0.0.1:9/mcp", mcp: tool })
  })

  test("discovery lists it as the Bazaar lists MCP items", async () => {
    const { body } = await request(`${server.url}/x402/discovery/resources?type=mcp`)
    expect(body.items).toHaveLength(1)
    expect(body.items[0]).toMatchObject({ resource: "http://127.0.0.1:9/mcp", type: "mcp", ...tool })
  })

  test("the status page names the tool", async () => {
    const { status, body } = await request(`${server.url}/status/resources/mcp.inspect`)
    expect(status).toBe(200)
    expect(body).toContain("MCP tool")
    expect(body).toContain("inspect at http://127.0.0.1:9/mcp (streamable-http)")
  })
})
