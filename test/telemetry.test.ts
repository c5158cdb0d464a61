import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, Layer } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { TelemetryLive } from "../src/telemetry/Telemetry.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request, testConfig, typedClient } from "./support/server.js"

const API_KEY = "telemetry-test-secret-key"
/** The steps of a settle that passes every check (`Settlement.findRepeat` runs only when one refuses). */
const STEPS = [
  "Settlement.readPayment",
  "Settlement.checkPolicies",
  "Settlement.checkPayee",
  "Settlement.checkTransfer",
  "Settlement.reserve",
  "Settlement.forward"
]

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: unknown }>
}

/** A stand-in OTLP/HTTP collector on loopback: keeps every `/v1/traces` body it is sent. */
const startCollector = () => {
  const bodies: Array<string> = []
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      if (new URL(req.url).pathname !== "/v1/traces") return new Response("not found", { status: 404 })
      bodies.push(await req.text())
      return Response.json({})
    }
  })
  const spans = () =>
    bodies.flatMap((body) =>
      (
        JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }> }
      ).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans))
    )
  return { url: `http://127.0.0.1:${server.port}`, bodies, spans, stop: () => server.stop(true) }
}

const collector = startCollector()
let stack: Awaited<ReturnType<typeof startSellerStack>>
let server: Awaited<ReturnType<typeof startSellerStack>>["server"]
const keyed = { authorization: `Bearer ${API_KEY}` }

beforeAll(async () => {
  stack = await startSellerStack(
    () => ({
      apiKeys: [{ principal: "agent-1", sha256: apiKeyHash(API_KEY) }],
      telemetry: { otlpEndpoint: collector.url, serviceName: "sextant-test" }
    }),
    API_KEY
  )
  server = stack.server
})
afterAll(async () => {
  await stack.stop()
  collector.stop()
})

describe("traces over OTLP (telemetry.otlpEndpoint)", () => {
  test("a settle exports its steps as spans parented under the HTTP request's server span, with no key in any attribute", async () => {
    const probe = await it.run(
      (await typedClient(server.url, keyed)).verification.validate({
        payload: { resourceId: ResourceId.make(RESOURCE_ID) }
      })
    )
    expect(probe.healthy).toBe(true)
    const requirements = exactRequirements({ payTo: PAY_TO })
    const body = settleBody(await buildExactPayment(requirements, { buyer: seededBuyer(81) }), requirements)
    // Raw where the test reads the status alone; a settle answers 200 only when it settled.
    const settled = await request(`${server.url}/x402/settle`, { method: "POST", json: body, headers: keyed })
    expect(settled.status).toBe(200)

    const spans = await pollUntil(
      "the settle's spans reach the collector",
      async () => collector.spans(),
      (found) => STEPS.every((step) => found.some((s) => s.name === step)),
      { timeoutMs: 10_000, everyMs: 100 }
    )
    const root = spans.find((s) => s.name === "http.server POST /x402/settle")
    expect(root).toBeDefined()
    const byId = new Map(spans.map((s) => [s.spanId, s] as const))
    /** The chain of parents of a span, up to the root of what was exported. */
    const ancestors = (span: OtlpSpan) => {
      const chain: Array<string> = []
      for (
        let at = span.parentSpanId ? byId.get(span.parentSpanId) : undefined;
        at;
        at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined
      ) {
        chain.push(at.name)
      }
      return chain
    }
    for (const step of STEPS) {
      const span = spans.find((s) => s.name === step && s.traceId === root!.traceId)
      expect(span).toBeDefined()
      expect(ancestors(span!)).toContain("http.server POST /x402/settle")
      expect(ancestors(span!)).toContain("Settlement.settle")
    }
    // The facilitator call and the journal's queries sit in the same trace.
    expect(spans.some((s) => s.name === "FacilitatorPool.settleVia" && s.traceId === root!.traceId)).toBe(true)
    expect(spans.some((s) => s.name === "SettlementJournal.reserve" && s.traceId === root!.traceId)).toBe(true)

    const exported = collector.bodies.join("\n")
    expect(exported).not.toContain(API_KEY)
    expect(exported).toContain("sextant-test")
    const authorization = root!.attributes.find((a) => a.key === "http.request.header.authorization")
    expect(authorization?.value).toEqual({ stringValue: "<redacted>" })
  })
})

describe("logFormat", () => {
  it.live('"json" writes one JSON object per log line', () =>
    Effect.gen(function* () {
      const lines: Array<string> = []
      const original = console.log
      console.log = (line: unknown) => void lines.push(String(line))
      try {
        yield* Effect.logInfo("hello from the test").pipe(
          Effect.annotateLogs("component", "telemetry-test"),
          Effect.provide(Layer.mergeAll(TelemetryLive({ ...testConfig(), logFormat: "json" }, "test")))
        )
      } finally {
        console.log = original
      }
      const entry = JSON.parse(lines.find((l) => l.includes("hello from the test")) ?? "{}")
      expect(entry).toMatchObject({
        message: "hello from the test",
        logLevel: "INFO",
        annotations: { component: "telemetry-test" }
      })
    })
  )

  test("telemetry is off by default: no otlpEndpoint, text logs", () => {
    expect(testConfig().telemetry.otlpEndpoint).toBeNull()
    expect(testConfig().logFormat).toBe("text")
  })
})
