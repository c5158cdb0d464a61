import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test"
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client"
import { Client as V1Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as V1Transport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { decodePaymentRequiredHeader } from "@x402/core/http"
import type { PaymentRequired } from "@x402/core/types"
import { PAYMENT_META, PAYMENT_RESPONSE_META, X402_MCP_EXTENSION } from "../src/x402/mcpAnswer.js"
import type { FixtureFacilitator } from "./fixtures/facilitator.js"
import { CLAW, GHOST, HOLDER } from "./fixtures/stellarAssets.js"
import { buildExactPayment } from "./fixtures/stellarPayment.js"
import { startVerticalMcp } from "./fixtures/verticalMcp.js"
import { inspector } from "./support/inspector.js"
import { recordingFetch } from "./support/mcpWire.js"

const MODERN = "2026-07-28"
let stack: Awaited<ReturnType<typeof startVerticalMcp>>
let fac: FixtureFacilitator
let mcpUrl: string
let httpChallenge: PaymentRequired

/** A 2026-07-28 client (the v2 SDK), advertising the x402 extension (and elicitation) per request or not. */
const connect = async (options: { extension: boolean; elicit?: (params: unknown) => Record<string, unknown> }) => {
  const wire = recordingFetch()
  const client = new Client(
    { name: "paid-mcp-test", version: "1.0.0" },
    {
      versionNegotiation: { mode: { pin: MODERN } },
      capabilities: {
        ...(options.extension ? { extensions: { [X402_MCP_EXTENSION]: {} } } : {}),
        ...(options.elicit ? { elicitation: { form: {} } } : {})
      }
    }
  )
  if (options.elicit) {
    const elicit = options.elicit
    client.setRequestHandler("elicitation/create", async (request) => ({
      action: "accept",
      content: elicit(request.params) as Record<string, string>
    }))
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { fetch: wire.fetch }))
  return { client, wire, last: () => wire.exchanges.at(-1)!.response }
}

const settles = () => fac.calls("/settle")
const pay = (required: PaymentRequired) => buildExactPayment(required.accepts[0]!)

beforeAll(async () => {
  stack = await startVerticalMcp()
  ;({ fac, mcpUrl } = stack)
  const http = await fetch(`${stack.vertical.baseUrl}/inspect`, {
    method: "POST",
    body: JSON.stringify({ asset: CLAW })
  })
  httpChallenge = decodePaymentRequiredHeader(http.headers.get("payment-required")!)
})

afterEach(() => fac.setMode("succeed"))

afterAll(async () => {
  await stack?.stop()
})

describe("the vertical's paid MCP over 2026-07-28 (org.x402/payment extension)", () => {
  test("server/discover advertises the extension; tools, resource templates and prompts are listed", async () => {
    const { client } = await connect({ extension: true })
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN)
    expect(client.getServerCapabilities()?.extensions?.[X402_MCP_EXTENSION]).toBeDefined()
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
      "inspect",
      "changes",
      "compliance",
      "eligibility"
    ])
    expect((await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate)).toContain(
      "rwa://stellar-intel/inspect{?asset}"
    )
    expect((await client.listPrompts()).prompts.map((p) => p.name)).toContain("rwa_compliance_review")
    await client.close()
  })

  test("a paid tool call: payment_required at the HTTP price, then one settle and the data with its settlement", async () => {
    const { client, last } = await connect({ extension: true })
    await expect(client.callTool({ name: "inspect", arguments: { asset: CLAW } })).rejects.toThrow(/payment_required/)
    const asked = last().result
    expect(asked.resultType).toBe("payment_required")
    expect(asked.paymentRequired.accepts).toEqual(httpChallenge.accepts)
    const before = settles()
    const paid = await client.callTool({
      name: "inspect",
      arguments: { asset: CLAW },
      _meta: { [PAYMENT_META]: await pay(asked.paymentRequired) }
    })
    expect(settles()).toBe(before + 1)
    expect(last().result.resultType).toBe("complete")
    expect(paid.isError).toBeFalsy()
    expect(paid.structuredContent).toMatchObject({ asset: expect.anything() })
    expect(paid._meta?.[PAYMENT_RESPONSE_META]).toMatchObject({ success: true, network: "stellar:testnet" })
    await client.close()
  })

  test("a paid resource read: each capability is a resource, asked and settled once", async () => {
    const { client, last } = await connect({ extension: true })
    const uri = `rwa://stellar-intel/compliance?asset=${encodeURIComponent(CLAW)}`
    await expect(client.readResource({ uri })).rejects.toThrow(/payment_required/)
    const asked = last().result
    expect(asked.resultType).toBe("payment_required")
    const before = settles()
    const read = await client.readResource({ uri, _meta: { [PAYMENT_META]: await pay(asked.paymentRequired) } })
    expect(settles()).toBe(before + 1)
    expect(read.contents[0]).toMatchObject({ uri, mimeType: "application/json" })
    expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ asset: expect.anything() })
    expect(read._meta?.[PAYMENT_RESPONSE_META]).toMatchObject({ success: true })
    await client.close()
  })

  test("a paid prompt: asked, then one settle and the findings framed for review", async () => {
    const { client, last } = await connect({ extension: true })
    await expect(client.getPrompt({ name: "rwa_inspect_review", arguments: { asset: CLAW } })).rejects.toThrow(
      /payment_required/
    )
    const asked = last().result
    expect(asked.resultType).toBe("payment_required")
    const before = settles()
    const prompt = await client.getPrompt({
      name: "rwa_inspect_review",
      arguments: { asset: CLAW },
      _meta: { [PAYMENT_META]: await pay(asked.paymentRequired) }
    })
    expect(settles()).toBe(before + 1)
    expect(prompt.messages[0]!.content).toMatchObject({
      type: "text",
      text: expect.stringContaining(CLAW.split(":")[0]!)
    })
    expect(prompt._meta?.[PAYMENT_RESPONSE_META]).toMatchObject({ success: true })
    await client.close()
  })

  test("an input_required round (the wallet asked by elicitation) settles nothing; the completed call settles once", async () => {
    const before = settles()
    let settlesWhileAsked = -1
    const { client, wire } = await connect({
      extension: true,
      elicit: () => {
        settlesWhileAsked = settles()
        return { wallet: HOLDER }
      }
    })
    await expect(client.callTool({ name: "eligibility", arguments: { asset: CLAW } })).rejects.toThrow(
      /payment_required/
    )
    const asked = wire.exchanges.at(-1)!.response.result
    const paid = await client.callTool({
      name: "eligibility",
      arguments: { asset: CLAW },
      _meta: { [PAYMENT_META]: await pay(asked.paymentRequired) }
    })
    const results = wire.exchanges
      .filter((e) => e.request?.method === "tools/call")
      .map((e) => e.response.result.resultType)
    expect(results).toEqual(["payment_required", "input_required", "complete"])
    expect(settlesWhileAsked).toBe(before)
    expect(settles()).toBe(before + 1)
    expect(paid.structuredContent).toMatchObject({ wallet: HOLDER })
    await client.close()
  })

  test("a tool error settles nothing: a paid call for an asset that does not exist", async () => {
    const { client, last } = await connect({ extension: true })
    const before = settles()
    const answer = await client.callTool({
      name: "inspect",
      arguments: { asset: GHOST },
      _meta: { [PAYMENT_META]: await pay(httpChallenge) }
    })
    expect(answer.isError).toBe(true)
    expect(answer.content[0]).toMatchObject({ type: "text", text: expect.stringContaining("ASSET_NOT_FOUND:") })
    expect(last().result.resultType).toBe("complete")
    expect(settles()).toBe(before)
    await client.close()
  })

  test("a settlement the facilitator refused withholds the result and asks again, its SettlementResponse attached", async () => {
    const { client, last } = await connect({ extension: true })
    fac.setMode("settleRefused")
    const before = settles()
    await expect(
      client.callTool({
        name: "inspect",
        arguments: { asset: CLAW },
        _meta: { [PAYMENT_META]: await pay(httpChallenge) }
      })
    ).rejects.toThrow(/payment_required/)
    const asked = last().result
    expect(settles()).toBe(before + 1)
    expect(asked).toMatchObject({
      resultType: "payment_required",
      paymentRequired: { error: expect.stringContaining("Settlement failed") }
    })
    expect(asked._meta[PAYMENT_RESPONSE_META]).toMatchObject({ success: false })
    expect(asked.structuredContent).toBeUndefined()
    expect(asked.content ?? []).toEqual([])
    await client.close()
  })

  test("a settlement nobody confirmed withholds the result: tool, resource and prompt", async () => {
    const { client, last } = await connect({ extension: true })
    fac.setMode("settleDown")
    const tool = await client.callTool({
      name: "inspect",
      arguments: { asset: CLAW },
      _meta: { [PAYMENT_META]: await pay(httpChallenge) }
    })
    expect(tool.isError).toBe(true)
    expect(tool.content[0]).toMatchObject({ type: "text", text: expect.stringContaining("SETTLEMENT_UNCONFIRMED") })
    expect(tool.structuredContent).toBeUndefined()
    const uri = `rwa://stellar-intel/inspect?asset=${encodeURIComponent(CLAW)}`
    await expect(client.readResource({ uri, _meta: { [PAYMENT_META]: await pay(httpChallenge) } })).rejects.toThrow(
      /SETTLEMENT_UNCONFIRMED/
    )
    expect(last().result).toBeUndefined()
    await expect(
      client.getPrompt({
        name: "rwa_inspect_review",
        arguments: { asset: CLAW },
        _meta: { [PAYMENT_META]: await pay(httpChallenge) }
      })
    ).rejects.toThrow(/SETTLEMENT_UNCONFIRMED/)
    expect(last().result).toBeUndefined()
    expect(fac.calls("/settle")).toBeGreaterThan(0)
    await client.close()
  })
})

describe("a request that does not advertise the extension is never asked payment_required", () => {
  test("2026-07-28 without it: the tool-result binding for tools, a JSON-RPC error for resources and prompts, nothing run", async () => {
    const { client, last } = await connect({ extension: false })
    expect(client.getServerCapabilities()?.extensions?.[X402_MCP_EXTENSION]).toBeDefined()
    const verifies = fac.calls("/verify")
    const tool = await client.callTool({ name: "inspect", arguments: { asset: CLAW } })
    expect(last().result.resultType).toBe("complete")
    expect(tool.isError).toBe(true)
    expect((tool.structuredContent as unknown as PaymentRequired).accepts).toEqual(httpChallenge.accepts)
    await expect(
      client.readResource({ uri: `rwa://stellar-intel/inspect?asset=${encodeURIComponent(CLAW)}` })
    ).rejects.toThrow(new RegExp(X402_MCP_EXTENSION))
    expect(last().error).toMatchObject({ code: -32600 })
    await expect(client.getPrompt({ name: "rwa_inspect_review", arguments: { asset: CLAW } })).rejects.toThrow(
      new RegExp(X402_MCP_EXTENSION)
    )
    expect(fac.calls("/verify")).toBe(verifies)
    await client.close()
  })

  test("a 2025-11-25 client that advertised it at initialize gets the tool-result binding: the extension is read per request", async () => {
    const client = new V1Client(
      { name: "legacy-test", version: "1.0.0" },
      { capabilities: { extensions: { [X402_MCP_EXTENSION]: {} } } }
    )
    await client.connect(new V1Transport(new URL(mcpUrl)))
    const answer = (await client.callTool({ name: "inspect", arguments: { asset: CLAW } })) as Record<string, any>
    expect(answer.resultType).toBeUndefined()
    expect(answer.isError).toBe(true)
    expect(answer.structuredContent.accepts).toEqual(httpChallenge.accepts)
    const before = settles()
    const paid = (await client.callTool({
      name: "inspect",
      arguments: { asset: CLAW },
      _meta: { [PAYMENT_META]: await pay(answer.structuredContent) }
    })) as Record<string, any>
    expect(settles()).toBe(before + 1)
    expect(paid._meta[PAYMENT_RESPONSE_META]).toMatchObject({ success: true })
    // A resource read is asked only of a request advertising the extension in its own _meta, never from initialize.
    const verifies = fac.calls("/verify")
    await expect(
      client.readResource({ uri: `rwa://stellar-intel/inspect?asset=${encodeURIComponent(CLAW)}` })
    ).rejects.toThrow(new RegExp(X402_MCP_EXTENSION))
    expect(fac.calls("/verify")).toBe(verifies)
    await client.close()
  })
})

describe("the vertical's MCP endpoint keeps no session", () => {
  test("GET (a server-to-client stream) and DELETE (a session's end) are 405 with Allow: POST, answered at once", async () => {
    for (const method of ["GET", "DELETE"]) {
      const answer = await fetch(mcpUrl, {
        method,
        headers: { accept: "application/json, text/event-stream" },
        signal: AbortSignal.timeout(5_000)
      })
      expect([method, answer.status, answer.headers.get("allow")]).toEqual([method, 405, "POST"])
      expect(await answer.json()).toMatchObject({ error: { message: expect.stringContaining("POST") } })
    }
  })

  test("an initialize is answered without an Mcp-Session-Id", async () => {
    const answer = await fetch(mcpUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } }
      })
    })
    expect(answer.status).toBe(200)
    expect(answer.headers.get("mcp-session-id")).toBeNull()
    expect((await answer.json()).result.protocolVersion).toBe("2025-11-25")
  })
})

describe("malformed params are the client's error", () => {
  test("resources/read and prompts/get with params of the wrong type are -32602 naming the field, not -32603", async () => {
    const post = async (method: string, params: unknown) =>
      (await (
        await fetch(mcpUrl, {
          method: "POST",
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
        })
      ).json()) as { error: { code: number; message: string } }
    expect((await post("resources/read", { uri: 5 })).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining("uri")
    })
    expect((await post("prompts/get", { name: "rwa_inspect_review", arguments: { asset: 5 } })).error).toMatchObject({
      code: -32602,
      message: expect.stringContaining("asset")
    })
  })
})

describe("the MCP Inspector CLI against the paid vertical", () => {
  test("lists the paid tools and resource templates; an unpaid call is the tool-result binding's price", async () => {
    const tools = await inspector([mcpUrl, "--transport", "http", "--method", "tools/list"])
    expect(tools.exitCode).toBe(0)
    expect(JSON.parse(tools.stdout).tools.map((t: { name: string }) => t.name)).toEqual([
      "inspect",
      "changes",
      "compliance",
      "eligibility"
    ])
    const templates = await inspector([mcpUrl, "--transport", "http", "--method", "resources/templates/list"])
    expect(templates.exitCode).toBe(0)
    expect(JSON.parse(templates.stdout).resourceTemplates).toHaveLength(4)
    const verifies = fac.calls("/verify")
    const called = await inspector([
      mcpUrl,
      "--transport",
      "http",
      "--method",
      "tools/call",
      "--tool-name",
      "inspect",
      "--tool-arg",
      `asset=${CLAW}`
    ])
    expect(JSON.parse(called.stdout)).toMatchObject({
      isError: true,
      structuredContent: { x402Version: 2, accepts: httpChallenge.accepts }
    })
    expect(fac.calls("/verify")).toBe(verifies)
  })
})
