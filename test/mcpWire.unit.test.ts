import { describe, expect, test } from "bun:test"
import { incoming, outgoing, RequestBudget, sseMessages } from "../src/outbound/mcpWire.js"

const response = (id: number | string, result: unknown = {}) => ({ jsonrpc: "2.0", id, result })

describe("what an MCP client of this service sends (pure)", () => {
  test("its own requests and notifications go out", () => {
    expect(outgoing(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: {} }))).toEqual({
      method: "tools/call",
      id: 1
    })
    expect(outgoing(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }))).toEqual({
      method: "notifications/initialized",
      id: null
    })
  })

  test("an answer to a server request, a batch, another method or garbage never does", () => {
    expect(outgoing(JSON.stringify(response("ping-1")))).toHaveProperty("refused")
    expect(outgoing(JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "tools/call" }]))).toHaveProperty("refused")
    expect(outgoing(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "sampling/createMessage" }))).toHaveProperty(
      "refused"
    )
    expect(outgoing("{not json")).toHaveProperty("refused")
    expect(outgoing(undefined)).toHaveProperty("refused")
  })
})

describe("what reaches the SDK (pure)", () => {
  test("the one response to the request, from JSON or an event stream; the rest is dropped", () => {
    expect(incoming(7, "application/json", JSON.stringify(response(7, { ok: true })))).toEqual({
      response: JSON.stringify(response(7, { ok: true })),
      dropped: 0
    })
    const stream = [
      { jsonrpc: "2.0", id: "p", method: "ping" },
      { jsonrpc: "2.0", method: "notifications/message" },
      response(6),
      response(7)
    ]
      .map((m, i) => `id: ${i}\nevent: message\ndata: ${JSON.stringify(m)}\n\n`)
      .join("")
    expect(incoming(7, "text/event-stream; charset=utf-8", stream)).toEqual({
      response: JSON.stringify(response(7)),
      dropped: 3
    })
  })

  test("a batch is refused even when it holds the response; an answer without it is refused", () => {
    expect(
      incoming(7, "application/json", JSON.stringify([{ jsonrpc: "2.0", id: "p", method: "ping" }, response(7)]))
    ).toHaveProperty("refused")
    expect(incoming(7, "text/event-stream", `data: ${JSON.stringify([response(7)])}\n\n`)).toHaveProperty("refused")
    expect(incoming(7, "application/json", JSON.stringify({ jsonrpc: "2.0", id: "p", method: "ping" }))).toHaveProperty(
      "refused"
    )
    expect(incoming(7, "application/json", JSON.stringify(response("7")))).toHaveProperty("refused")
  })

  test("event stream parsing: multi-line data joined, other event types and comments skipped", () => {
    expect(sseMessages(': comment\n\nevent: other\ndata: 1\n\ndata: {"a":\ndata: 1}\n\n')).toEqual(['{"a":\n1}'])
  })

  test("a budget refuses once spent and grows by what is granted", () => {
    const budget = new RequestBudget(1)
    expect([budget.take(), budget.take()]).toEqual([true, false])
    budget.grant(2)
    expect([budget.take(), budget.take(), budget.take()]).toEqual([true, true, false])
  })
})
