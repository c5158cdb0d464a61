/**
 * The vertical's four paid MCP tools, served at one MCP endpoint, as the stock @x402/extensions
 * 2.27 bazaar client reads them from Sextant's discovery list and search: four distinct tools,
 * each named where the x402 bazaar specification puts it (the bazaar extension's
 * `info.input.toolName`), identified by (resource URL, toolName).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HTTPFacilitatorClient } from "@x402/core/http"
import {
  type DiscoveryExtension,
  type DiscoveryResource,
  validateDiscoveryExtension,
  withBazaar
} from "@x402/extensions/bazaar"
import demoCatalog from "../src/store/demo-catalog.json" with { type: "json" }
import { startServer, testConfig } from "./support/server.js"

const TOOLS = ["changes", "compliance", "eligibility", "inspect"]
const verticalTools = demoCatalog.filter((e) => e.resource.id.startsWith("stellar-intel.mcp."))

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(testConfig({ catalog: verticalTools as any }))
})
afterAll(() => server.close())

const bazaar = () => withBazaar(new HTTPFacilitatorClient({ url: `${server.url}/x402` })).extensions.bazaar

/** The tool a stock client reads from an item: the bazaar extension's `info.input`, validated against its own schema. */
const toolOf = (item: DiscoveryResource) => {
  const extension = item.extensions?.bazaar as DiscoveryExtension | undefined
  expect(extension).toBeDefined()
  expect(validateDiscoveryExtension(extension!)).toEqual({ valid: true })
  const input = extension!.info.input as {
    type: string
    toolName: string
    transport?: string
    inputSchema: Record<string, unknown>
  }
  expect(input).toMatchObject({ type: "mcp", transport: "streamable-http", inputSchema: { type: "object" } })
  return { url: item.resource, toolName: input.toolName }
}

describe("MCP tools in discovery, through the stock bazaar client", () => {
  test("the list names the four tools of one MCP endpoint as four distinct (url, toolName) items", async () => {
    expect(verticalTools).toHaveLength(4)
    const page = await bazaar().listResources({ type: "mcp" })
    expect(page.pagination.total).toBe(4)
    const tools = page.items.map(toolOf)
    expect(new Set(tools.map((t) => t.url)).size).toBe(1)
    expect(tools.map((t) => t.toolName).sort()).toEqual(TOOLS)
    expect(new Set(tools.map((t) => `${t.url} ${t.toolName}`)).size).toBe(4)
  })

  test("search answers the same tool fields", async () => {
    const found = await bazaar().search({ query: "eligibility", type: "mcp" })
    const tools = found.resources.map(toolOf)
    expect(tools.map((t) => t.toolName)).toContain("eligibility")
  })
})
