import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types"
import { Effect, Either } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { bazaarId } from "../src/extensions/bazaar.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { LOOPBACK, pollUntil } from "./support/poll.js"
import { SELLER_PAY_TO, SELLER_RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { refusal, request, typedClient } from "./support/server.js"

const KEY_ONE = "agent-one-secret-key"
const KEY_TWO = "agent-two-secret-key"
const PAYEE = SELLER_PAY_TO
const one = { authorization: `Bearer ${KEY_ONE}` }
const two = { authorization: `Bearer ${KEY_TWO}` }

let stack: Awaited<ReturnType<typeof startSellerStack>>
let server: typeof stack.server
let backend: typeof stack.backend

let seed = 100
/** A fresh signed payment to PAYEE (a new buyer each time, so every payment is distinct). */
const payment = async (extensions?: Record<string, unknown>) => {
  const requirements = exactRequirements({ payTo: PAYEE })
  const signed = await buildExactPayment(requirements, { buyer: seededBuyer(seed++) })
  return { requirements, payment: { ...signed, ...(extensions === undefined ? {} : { extensions }) } as PaymentPayload }
}
const body = (p: { payment: PaymentPayload; requirements: PaymentRequirements }) =>
  settleBody(p.payment, p.requirements)
/** Settles stay raw: these tests read the extension answers in the response headers. */
const post = (path: string, json: unknown, headers: Record<string, string> = one) =>
  request(`${server.url}${path}`, { method: "POST", headers, json })
/** The journal as agent one reads it, through the typed client. */
const journalOfOne = async () => it.run((await typedClient(server.url, one)).x402.settlements({ urlParams: {} }))
const detailOf = (id: string) => it.run(server.client.resources.get({ path: { id: ResourceId.make(id) } }))
/** The resource once ingestion has catalogued it. */
const catalogued = async (label: string, id: string) =>
  (
    await pollUntil(
      label,
      () => it.run(Effect.either(server.client.resources.get({ path: { id: ResourceId.make(id) } }))),
      Either.isRight,
      LOOPBACK
    )
  ).pipe(Either.getOrThrow)
const notCatalogued = async (id: string) =>
  expect(await refusal(server.client.resources.get({ path: { id: ResourceId.make(id) } }))).toMatchObject({
    error: "NOT_FOUND"
  })

/** The payment-identifier extension as a client echoes it with its id (specs/extensions/payment_identifier.md). */
const identifier = (id: unknown, required = false) => ({
  "payment-identifier": {
    info: { required, ...(id === undefined ? {} : { id }) },
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: { required: { type: "boolean" }, id: { type: "string", minLength: 16, maxLength: 128 } },
      required: ["required"]
    }
  }
})

/** Backend calls of `path` that carried this signed transaction. */
const backendCalls = (path: string, p: { payment: PaymentPayload }) =>
  backend.requests.filter(
    (r) =>
      r.path === path &&
      (r.body as { paymentPayload?: { payload?: { transaction?: string } } })?.paymentPayload?.payload?.transaction ===
        p.payment.payload.transaction
  ).length

beforeAll(async () => {
  stack = await startSellerStack(
    () => ({
      apiKeys: [
        { principal: "agent-1", sha256: apiKeyHash(KEY_ONE) },
        { principal: "agent-2", sha256: apiKeyHash(KEY_TWO) }
      ]
    }),
    KEY_ONE
  )
  ;({ server, backend } = stack)
  const probe = await post("/v1/validate", { resourceId: SELLER_RESOURCE_ID })
  if (probe.body.healthy !== true)
    throw new Error(`the seller's resource did not probe healthy: ${JSON.stringify(probe.body)}`)
})
afterAll(() => stack.stop())

describe("payment-identifier on /x402/settle", () => {
  test("same id and payload: the stored answer, one backend settle; same id, another payload: 409; another principal: a request of its own", async () => {
    const id = "pay_settle_0123456789abcdef"
    const first = await payment(identifier(id))
    const settled = await post("/x402/settle", body(first))
    expect(settled.status).toBe(200)
    expect(settled.body.success).toBe(true)

    const again = await post("/x402/settle", body(first))
    expect(again.status).toBe(200)
    expect(again.body).toEqual(settled.body)
    expect(backendCalls("/settle", first)).toBe(1)

    const other = await payment(identifier(id))
    const reused = await post("/x402/settle", body(other))
    expect(reused.status).toBe(409)
    expect(reused.body.error).toBe("IDEMPOTENCY_KEY_REUSED")
    expect(backendCalls("/settle", other)).toBe(0)

    const stranger = await payment(identifier(id))
    const theirs = await post("/x402/settle", body(stranger), two)
    expect(theirs.status).toBe(200)
    expect(backendCalls("/settle", stranger)).toBe(1)

    // The journal names the settlement by the identifier, as it would an Idempotency-Key.
    const journal = await journalOfOne()
    expect(journal.settlements.filter((s) => s.idempotencyKey === id)).toHaveLength(1)
  })

  test("an Idempotency-Key header takes precedence over the identifier", async () => {
    const p = await payment(identifier("pay_header_wins_0123456789"))
    expect((await post("/x402/settle", body(p), { ...one, "idempotency-key": "order-77" })).status).toBe(200)
    const journal = await journalOfOne()
    expect(journal.settlements.map((s) => s.idempotencyKey)).toContain("order-77")
  })

  test("a malformed id is 400, and so is a required identifier that is missing; neither reaches a backend", async () => {
    for (const bad of ["too-short", "x".repeat(129), "pay with spaces 0123456789", 42]) {
      const p = await payment(identifier(bad))
      for (const path of ["/x402/settle", "/x402/verify"]) {
        const refused = await post(path, body(p))
        expect({ bad, path, status: refused.status, error: refused.body.error }).toEqual({
          bad,
          path,
          status: 400,
          error: "INVALID_REQUEST"
        })
        expect(refused.body.message).toContain("payment-identifier")
      }
      expect(backendCalls("/settle", p) + backendCalls("/verify", p)).toBe(0)
    }
    const missing = await payment(identifier(undefined, true))
    for (const path of ["/x402/settle", "/x402/verify"]) {
      const refused = await post(path, body(missing))
      expect(refused.status).toBe(400)
      expect(refused.body.message).toContain("required")
    }
    // Required and present is fine.
    expect(
      (await post("/x402/verify", body(await payment(identifier("pay_required_0123456789ab", true))))).status
    ).toBe(200)
  })
})

describe("payment-identifier on /x402/verify", () => {
  test("same id and body: the cached answer without a backend call; another body: 409; another principal: its own request", async () => {
    const id = "pay_verify_0123456789abcdef"
    const first = await payment(identifier(id))
    const verified = await post("/x402/verify", body(first))
    expect(verified.status).toBe(200)
    expect(verified.body.isValid).toBe(true)
    const again = await post("/x402/verify", body(first))
    expect(again.status).toBe(200)
    expect(again.body).toEqual(verified.body)
    expect(backendCalls("/verify", first)).toBe(1)

    const other = await payment(identifier(id))
    const reused = await post("/x402/verify", body(other))
    expect(reused.status).toBe(409)
    expect(reused.body.error).toBe("IDEMPOTENCY_KEY_REUSED")
    expect(backendCalls("/verify", other)).toBe(0)

    expect((await post("/x402/verify", body(other), two)).status).toBe(200)
    expect(backendCalls("/verify", other)).toBe(1)
  })

  test("without an identifier or key, every verify reaches the backend", async () => {
    const p = await payment()
    await post("/x402/verify", body(p))
    await post("/x402/verify", body(p))
    expect(backendCalls("/verify", p)).toBe(2)
  })
})

/** A bazaar extension for a GET endpoint, as specs/extensions/bazaar.md shows it. */
const bazaar = (info: Record<string, unknown>, schemaOverride?: Record<string, unknown>) => ({
  bazaar: {
    info,
    schema: schemaOverride ?? {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        input: {
          type: "object",
          properties: {
            type: { type: "string", const: "http" },
            method: { type: "string", enum: ["GET", "HEAD", "DELETE"] },
            queryParams: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
          },
          required: ["type", "method"],
          additionalProperties: false
        },
        output: {
          type: "object",
          properties: { type: { type: "string" }, example: { type: "object" } },
          required: ["type"]
        }
      },
      required: ["input"]
    }
  }
})
const weatherInfo = {
  input: { type: "http", method: "GET", queryParams: { city: "Lisbon" } },
  output: { type: "json", example: { weather: "sunny" } }
}
/** Where the paid resource says it lives: loopback, never contacted (no probe cycle runs in these tests). */
const withResource = (p: { payment: PaymentPayload; requirements: PaymentRequirements }, url: string) => ({
  ...p,
  payment: {
    ...p.payment,
    resource: { url, description: "Weather by city", mimeType: "application/json", serviceName: "Weather Co" }
  }
})
const extensionResponses = (headers: Headers) => {
  const value = headers.get("extension-responses")
  return value === null ? null : JSON.parse(Buffer.from(value, "base64").toString("utf8"))
}

describe("bazaar extension ingestion", () => {
  test("a settle carrying a valid extension catalogs the resource unlisted (source bazaar) and answers EXTENSION-RESPONSES", async () => {
    const url = "http://127.0.0.1:9/weather"
    const p = withResource(await payment(bazaar(weatherInfo)), url)
    const settled = await post("/x402/settle", body(p))
    expect(settled.status).toBe(200)
    expect(settled.body.success).toBe(true)
    expect(["success", "processing"]).toContain(extensionResponses(settled.headers)?.bazaar?.status)

    const id = bazaarId(url, PAYEE)
    const detail = await catalogued("the ingested resource is catalogued", id)
    expect(detail.resource).toMatchObject({
      id,
      type: "http",
      url,
      method: "GET",
      name: "Weather Co",
      description: "Weather by city",
      status: "DISCOVERED"
    })
    expect(detail.listing).toEqual({ listed: false, source: "bazaar", trusted: false })
    expect(detail.paymentOptions).toEqual([
      expect.objectContaining({
        network: "stellar:testnet",
        scheme: "exact",
        amount: "10000",
        amountUsd: 0.001,
        payTo: PAYEE
      })
    ])
    // The payer is who added it: the principal its ingestion quota counts.
    expect(detail.curation.lastListingChange).toMatchObject({
      listed: false,
      actor: expect.stringMatching(/^G[A-Z2-7]{55}$/)
    })
    const listed = await it.run(server.client.resources.list({ urlParams: {} }))
    expect(listed.resources.map((r) => r.resource.id)).not.toContain(id)
  })

  test("a second payer cannot rewrite an entry, a repeat of a settled payment naming another URL catalogs nothing, and a second seller of one URL is a second entry", async () => {
    // Before the trust model the upsert replaced name, description and options of a listed entry,
    // and one settled authorisation could be replayed with any number of URLs.
    const url = "http://127.0.0.1:9/owned"
    const first = withResource(await payment(bazaar(weatherInfo)), url)
    // Another principal than the other tests', whose fee budget they use up.
    const settled = await post("/x402/settle", body(first), two)
    expect(settled.body.success).toBe(true)
    const id = bazaarId(url, PAYEE)
    const original = await catalogued("the first entry is catalogued", id)
    expect(original.resource.name).toBe("Weather Co")

    const rival = await payment(bazaar(weatherInfo))
    const rewrite = {
      ...rival,
      payment: { ...rival.payment, resource: { url, description: "now mine", serviceName: "Evil Co" } }
    }
    const second = await post("/x402/settle", body(rewrite), two)
    expect(second.body.success).toBe(true)
    expect(extensionResponses(second.headers).bazaar).toEqual({
      status: "rejected",
      rejectedReason: "an entry for this URL and payee is catalogued already; it is not rewritten"
    })
    const after = await detailOf(id)
    expect(after.resource).toMatchObject({ name: "Weather Co", description: "Weather by city" })

    const replayUrl = "http://127.0.0.1:9/replayed"
    const replay = await post("/x402/settle", body(withResource(first, replayUrl)), two)
    expect(replay.body.success).toBe(true)
    expect(extensionResponses(replay.headers).bazaar).toEqual({
      status: "rejected",
      rejectedReason: "this payment was settled before; a payment catalogs once"
    })
    expect(backendCalls("/settle", first)).toBe(1)
    await notCatalogued(bazaarId(replayUrl, PAYEE))

    expect(bazaarId(url, PAYEE)).not.toBe(bazaarId(url, "GSECONDSELLER"))
  })

  test("an info the schema refuses is rejected in the header, while the payment itself settles once", async () => {
    const url = "http://127.0.0.1:9/rejected"
    const p = withResource(await payment(bazaar({ input: { type: "http", method: "FETCH" } })), url)
    const settled = await post("/x402/settle", body(p))
    expect(settled.status).toBe(200)
    expect(settled.body.success).toBe(true)
    expect(backendCalls("/settle", p)).toBe(1)
    const answer = extensionResponses(settled.headers)
    expect(answer.bazaar.status).toBe("rejected")
    // The same status in the answer's own field, as 2.27 types settle (and verify) answers.
    expect(settled.body.extensionResponses).toEqual(answer)
    expect(answer.bazaar.rejectedReason).toContain("info failed schema validation")
    await notCatalogued(bazaarId(url, PAYEE))
  })

  test("a schema outside the allow-list is refused with 400 before any payment: regex keywords at any depth, remote references, oversized schemas, unknown keywords", async () => {
    const evil = {
      type: "object",
      properties: { input: { type: "object", properties: { method: { type: "string", pattern: "^(a+)+$" } } } }
    }
    // Under `dependencies`, which the old keyword walker did not enter.
    const hidden = { type: "object", dependencies: { input: { properties: { method: { pattern: "^(a+)+$" } } } } }
    const remote = { type: "object", properties: { input: { $ref: "https://127.0.0.1:9/schema.json" } } }
    const huge = {
      type: "object",
      properties: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`field${i}`, { type: "string" }]))
    }
    const cycle = {
      type: "object",
      $defs: { a: { properties: { next: { $ref: "#/$defs/a" } } } },
      properties: { input: { $ref: "#/$defs/a" } }
    }
    const cases: Array<[Record<string, unknown>, string]> = [
      [evil, '"pattern" is not among the keywords'],
      [hidden, '"dependencies" is not among the keywords'],
      [remote, "remote schemas are never fetched"],
      [huge, "larger than"],
      [cycle, "a cycle"],
      [{ type: "object", examplez: 1 }, '"examplez" is not among the keywords']
    ]
    for (const [schema, reason] of cases) {
      const p = withResource(
        await payment(bazaar({ input: { type: "http", method: `${"a".repeat(40)}!` } }, schema)),
        "http://127.0.0.1:9/evil"
      )
      const started = Date.now()
      const settled = await post("/x402/settle", body(p))
      expect(Date.now() - started).toBeLessThan(2_000)
      expect({
        status: settled.status,
        error: settled.body.error,
        reason: settled.body.message.includes(reason)
      }).toEqual({ status: 400, error: "INVALID_REQUEST", reason: true })
      expect(settled.body.message).toStartWith("paymentPayload.extensions.bazaar.")
      expect(backendCalls("/settle", p)).toBe(0)
    }
  })

  /** `/health/live` latencies (ms) measured while `pending` runs. */
  const liveLatencies = async (pending: Promise<unknown>) => {
    let done = false
    void pending.finally(() => (done = true))
    const latencies: Array<number> = []
    while (latencies.length < 5 || (!done && latencies.length < 200)) {
      const started = performance.now()
      const live = await fetch(`${server.url}/health/live`)
      latencies.push(performance.now() - started)
      expect(live.status).toBe(200)
      await Bun.sleep(10)
    }
    return latencies
  }

  test("a 40-level anyOf/$ref schema (3 KB, 2^40 paths) in a settle leaves /health/live answering within 100 ms and is refused", async () => {
    const levels = 40
    const $defs = Object.fromEntries(
      Array.from({ length: levels }, (_, i) => [
        `d${i}`,
        i === levels - 1
          ? { type: "string" }
          : { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] }
      ])
    )
    const schema = { type: "object", $defs, properties: { input: { $ref: "#/$defs/d0" } } }
    expect(JSON.stringify(schema).length).toBeLessThan(4_000)
    const p = withResource(await payment(bazaar(weatherInfo, schema)), "http://127.0.0.1:9/fan-out")
    const settling = post("/x402/settle", body(p))
    const latencies = await liveLatencies(settling)
    expect(Math.max(...latencies)).toBeLessThan(100)
    const settled = await settling
    expect(settled.status).toBe(400)
    expect(settled.body.message).toMatch(/expands to more than 1000 subschemas|nested deeper than 32 levels/)
  })

  test("an allowed schema whose validation runs long is ended at the time budget, off the request thread; the payment still settles once", async () => {
    // 100 uniqueItems checks over 2,400 distinct arrays: seconds of Ajv work, every keyword allowed.
    const schema = {
      type: "object",
      properties: {
        input: { type: "object" },
        list: { allOf: Array.from({ length: 100 }, () => ({ type: "array", uniqueItems: true })) }
      }
    }
    const list: Array<Array<number>> = []
    const info = { ...weatherInfo, list }
    while (JSON.stringify(info).length < 15_500) list.push([list.length])
    const url = "http://127.0.0.1:9/slow-schema"
    const p = withResource(await payment(bazaar(info, schema)), url)
    const settling = post("/x402/settle", body(p))
    const latencies = await liveLatencies(settling)
    expect(Math.max(...latencies)).toBeLessThan(100)
    const settled = await settling
    expect(settled.status).toBe(200)
    expect(settled.body.success).toBe(true)
    expect(backendCalls("/settle", p)).toBe(1)
    expect(extensionResponses(settled.headers).bazaar).toEqual({
      status: "rejected",
      rejectedReason: "schema validation ran over its budget of 500 ms"
    })
    await notCatalogued(bazaarId(url, PAYEE))
    // The next extension is validated by a fresh worker.
    const next = "http://127.0.0.1:9/after-slow"
    const after = await post("/x402/settle", body(withResource(await payment(bazaar(weatherInfo)), next)))
    expect(["success", "processing"]).toContain(extensionResponses(after.headers)?.bazaar?.status)
  })

  test("a verify-only payload catalogs nothing; a refused settle catalogs nothing; a request without the extension gets no header", async () => {
    // Before the trust model a valid verify catalogued the URL it named, with nothing paid.
    const url = "http://127.0.0.1:9/verified"
    const verified = await post("/x402/verify", body(withResource(await payment(bazaar(weatherInfo)), url)))
    expect(verified.status).toBe(200)
    expect(verified.body.isValid).toBe(true)
    expect(verified.headers.get("extension-responses")).toBeNull()
    await Bun.sleep(300)
    await notCatalogued(bazaarId(url, PAYEE))

    backend.setMode("invalid")
    try {
      const refusedUrl = "http://127.0.0.1:9/unpaid"
      const declined = await post("/x402/settle", body(withResource(await payment(bazaar(weatherInfo)), refusedUrl)))
      expect(declined.body.success).toBe(false)
      expect(extensionResponses(declined.headers).bazaar).toEqual({
        status: "rejected",
        rejectedReason: "the payment was not settled, so nothing was catalogued"
      })
      await notCatalogued(bazaarId(refusedUrl, PAYEE))
    } finally {
      backend.setMode("succeed")
    }
    const plain = await post("/x402/verify", body(await payment()))
    expect(plain.headers.get("extension-responses")).toBeNull()
  })
})
