import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import type { Config } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { it } from "./support/effectTest.js"
import { refusal, request, startServer, testConfig, typedClient } from "./support/server.js"

const SPEC_ENDPOINTS: ReadonlyArray<readonly [string, string]> = [
  ["get", "/health/live"],
  ["get", "/health/ready"],
  ["get", "/health/dependencies"],
  ["get", "/x402/supported"],
  ["post", "/x402/verify"],
  ["post", "/x402/settle"],
  ["get", "/x402/facilitators"],
  ["get", "/v1/resources"],
  ["get", "/v1/resources/{id}"],
  ["post", "/v1/search"],
  ["post", "/v1/validate"],
  ["get", "/v1/resources/{id}/metrics"],
  ["get", "/v1/resources/{id}/observations"],
  ["post", "/v1/routes"],
  ["post", "/v1/policies/evaluate"],
  ["post", "/v1/receipts"],
  ["get", "/v1/receipts/signer"],
  ["get", "/v1/receipts/{id}"],
  ["get", "/v1/receipts/{id}/verify"]
]

let server: Awaited<ReturnType<typeof startServer>>
let config: Config

beforeAll(async () => {
  config = testConfig()
  server = await startServer(config)
})
afterAll(() => server.close())

describe("health", () => {
  it.live("live and ready answer through the typed client", () =>
    Effect.gen(function* () {
      const live = yield* server.client.health.live()
      expect(live).toEqual({ status: "ok" })
      const ready = yield* server.client.health.ready()
      expect(ready.network).toBe("stellar:testnet")
      expect(ready.asset).toEqual({
        network: "stellar:testnet",
        assetContract: "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA",
        symbol: "USDC",
        decimals: 7,
        minimumAmount: "1",
        maximumAmount: "10000000000"
      })
    })
  )

  it.live("dependencies report the store and a facilitator section", () =>
    Effect.gen(function* () {
      const body = yield* server.client.health.dependencies()
      expect(body.store).toMatchObject({ kind: "sqlite", location: ":memory:", durable: false })
      expect(body.facilitators).toMatchObject({ configured: 0 })
    })
  )
})

describe("discovery", () => {
  it.live("lists the demo catalog from stored rows, every resource starting DISCOVERED at level 0", () =>
    Effect.gen(function* () {
      const { resources } = yield* server.client.resources.list({ urlParams: {} })
      expect(resources.map((r) => r.resource.id).sort()).toEqual(config.catalog.map((e) => e.resource.id).sort())
      for (const r of resources) {
        expect(r.resource.status).toBe("DISCOVERED")
        expect(r.resource.verificationLevel).toBe(0)
      }
    })
  )

  test("a resource comes with its metrics; an unknown id is 404 {error, message}", async () => {
    const body = await it.run(
      server.client.resources.get({ path: { id: ResourceId.make("stellar-intel.rwa.inspect") } })
    )
    expect(body.resource.capabilities).toEqual(["rwa.inspect"])
    expect(body.metrics).toMatchObject({ resourceId: "stellar-intel.rwa.inspect", confidence: 0, observationCount: 0 })
    expect(body.transitions).toEqual([])
    const missing = await refusal(server.client.resources.get({ path: { id: ResourceId.make("no-such-thing") } }))
    expect("error" in missing && { _tag: missing._tag, error: missing.error, message: missing.message }).toEqual({
      _tag: "NotFound",
      error: "NOT_FOUND",
      message: 'no resource with id "no-such-thing"'
    })
  })

  test("search ranks text matches by relevance and filters on worst-case price", async () => {
    const search = (payload: Parameters<typeof server.client.resources.search>[0]["payload"]) =>
      it.run(server.client.resources.search({ payload }))
    const hits = (await search({ query: "slow inspect" })).resources
    // Both terms in one name beat one term; ties go by id.
    expect<unknown>(hits[0]?.resource.id).toBe("demo-slow.rwa.inspect")
    expect(hits.slice(1).map((r) => r.resource.id)).toEqual([...hits.slice(1).map((r) => r.resource.id)].sort())
    expect(hits.map((r) => r.relevance)).toEqual([...hits.map((r) => r.relevance)].sort((a, b) => b - a))
    expect(hits[0]!.relevance).toBeGreaterThan(hits[1]!.relevance)
    // Every demo provider's upto option claims at most 0.0006 for rwa.inspect but authorises up to
    // its ceiling (0.0006 to 0.0015): worst case, so none is in under 0.0005 and only the flaky one at 0.0006.
    const cheap = await search({ capability: "rwa.inspect", scheme: "upto", maxPriceUsd: 0.0005 })
    expect(cheap.resources).toEqual([])
    const ceiling = await search({ capability: "rwa.inspect", scheme: "upto", maxPriceUsd: 0.0006 })
    expect<unknown>(ceiling.resources.map((r) => r.resource.id)).toEqual(["demo-flaky.rwa.inspect"])
  })

  it.live("quality filters never pass a resource without evidence", () =>
    Effect.gen(function* () {
      for (const payload of [{ minimumReliability: 0 }, { maximumP95LatencyMs: 100000 }]) {
        expect((yield* server.client.resources.search({ payload })).count).toBe(0)
      }
    })
  )
})

// Error cases send what the contract refuses (bad JSON, bad fields, wrong methods and types): raw requests.
describe("errors", () => {
  test("malformed JSON is 400 {error, message}", async () => {
    const res = await fetch(`${server.url}/v1/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"query":'
    })
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({ error: "MALFORMED_BODY", message: "the request body is not valid JSON" })
  })

  test("schema violations list every failing field, and unknown fields are refused", async () => {
    // Raw: a body the typed client would refuse to send.
    const { status, body } = await request(`${server.url}/v1/search`, {
      method: "POST",
      json: { maxPriceUsd: "cheap", network: "ethereum", surprise: true }
    })
    expect(status).toBe(400)
    expect(body.error).toBe("INVALID_REQUEST")
    expect(body.message).toContain("maxPriceUsd")
    expect(body.message).toContain("network")
    expect(body.message).toContain("surprise")
  })

  test("unknown routes are 404, wrong methods 405 with Allow, big bodies 413, other media types 415", async () => {
    // Raw: paths, methods, sizes and media types outside the contract, which the typed client cannot send.
    const unknown = await request(`${server.url}/v2/nothing`)
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toBe("NOT_FOUND")
    const wrong = await request(`${server.url}/v1/search`, { method: "GET" })
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get("allow")).toBe("POST")
    expect(wrong.body.error).toBe("METHOD_NOT_ALLOWED")
    for (const size of [1024 * 1024 + 10, 2 * 1024 * 1024]) {
      const big = await request(`${server.url}/v1/search`, { method: "POST", json: { query: "x".repeat(size) } })
      expect(big.status).toBe(413)
      expect(big.body.error).toBe("PAYLOAD_TOO_LARGE")
    }
    // A path the router cannot take (an over-long or badly escaped id) is a 404 for the right method, not a 405.
    for (const path of [
      `/v1/resources/${"a".repeat(150)}`,
      "/v1/resources/%ZZ",
      `/v1/receipts/${"b".repeat(150)}/verify`
    ]) {
      const missing = await request(`${server.url}${path}`)
      expect(missing.status).toBe(404)
      expect(missing.body.error).toBe("NOT_FOUND")
    }
    const form = await request(`${server.url}/v1/search`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "query=x"
    })
    expect(form.status).toBe(415)
    expect(form.body.error).toBe("UNSUPPORTED_MEDIA_TYPE")
  })

  test("a chunked body over 1 MiB is 413 and deep nesting is 400, both as {error, message}", async () => {
    const chunks = (text: string) =>
      new ReadableStream({
        start(controller) {
          for (let i = 0; i < text.length; i += 65536)
            controller.enqueue(new TextEncoder().encode(text.slice(i, i + 65536)))
          controller.close()
        }
      })
    const big = await fetch(`${server.url}/v1/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chunks(JSON.stringify({ query: "x".repeat(1024 * 1024 + 200) }))
    })
    expect(big.status).toBe(413)
    expect(((await big.json()) as any).error).toBe("PAYLOAD_TOO_LARGE")
    // Raw: a nesting the client's encoder would never produce; its well-formed twin below is compared by status.
    const deep = await request(`${server.url}/v1/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"query": "x", "asset": ${"[".repeat(20000)}${"]".repeat(20000)}}`
    })
    expect(deep.status).toBe(400)
    expect(deep.body.error).toBe("NESTING_TOO_DEEP")
    const brackets = await request(`${server.url}/v1/search`, { method: "POST", json: { query: "[[[[".repeat(40) } })
    expect(brackets.status).toBe(200)
  })

  test("a JSON body sent without a content type is 415, as a web page's cross-site Blob would be", async () => {
    const res = await fetch(`${server.url}/v1/search`, {
      method: "POST",
      body: new Blob([JSON.stringify({ query: "compliance" })])
    })
    expect(res.status).toBe(415)
    const body = (await res.json()) as any
    expect(body.error).toBe("UNSUPPORTED_MEDIA_TYPE")
    expect(body.message).toContain("Content-Type: application/json")
  })
})

describe("openapi", () => {
  test("/openapi.json is 3.1, version 0.1.0, Apache-2.0, and lists every path of the spec", async () => {
    // Raw: the document is served beside the contract, not as one of its endpoints.
    const { status, body } = await request(`${server.url}/openapi.json`)
    expect(status).toBe(200)
    expect(body.openapi).toMatch(/^3\.1\./)
    expect(body.info.version).toBe("0.1.0")
    expect(body.info.license.name).toBe("Apache-2.0")
    for (const [method, path] of SPEC_ENDPOINTS) {
      expect(body.paths[path]?.[method]).toBeDefined()
    }
    expect(body.paths["/v1/search"].post.requestBody).toBeDefined()
  })

  test("/docs renders a page from the same document", async () => {
    const res = await fetch(`${server.url}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/html")
    const html = await res.text()
    expect(html).toContain("Sextant")
    expect(html).toContain("/v1/routes")
  })
})

describe("api keys", () => {
  test("with keys configured, operator endpoints need a listed bearer key while discovery stays open", async () => {
    const key = "sk-test-0123456789"
    const sha256 = new Bun.CryptoHasher("sha256").update(key).digest("hex")
    const guarded = await startServer(testConfig({ apiKeys: [{ principal: "agent-7", sha256 }] }))
    try {
      const without = await refusal(guarded.client.health.dependencies())
      expect(without).toMatchObject({ error: "UNAUTHORIZED" })
      expect(JSON.stringify(without)).not.toContain(sha256)
      const wrong = await typedClient(guarded.url, { authorization: "Bearer nope" })
      expect(await refusal(wrong.health.dependencies())).toMatchObject({ error: "UNAUTHORIZED" })
      const right = await typedClient(guarded.url, { authorization: `Bearer ${key}` })
      expect((await it.run(right.health.dependencies())).store).toMatchObject({ kind: "sqlite" })
      const open = await it.run(guarded.client.resources.list({ urlParams: {} }))
      expect(open.resources.length).toBeGreaterThan(0)
    } finally {
      await guarded.close()
    }
  })
})
