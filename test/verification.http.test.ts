import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { Prober } from "../src/verification/Prober.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it, runScoped } from "./support/effectTest.js"
import { refusal, request, startServer, testConfig } from "./support/server.js"

let fixture: X402Fixture
let untrusted: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  fixture = await startX402Fixture()
  untrusted = await startX402Fixture()
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: [entry("paid", fixture.url("/paid")), entry("pricey", fixture.url("/pricey"))],
      probes: { ...base.probes, trustedOrigins: [fixture.origin], timeoutMs: 2000 },
      signer: { ed25519KeyFile: join(mkdtempSync(join(tmpdir(), "sextant-verification-http-")), "signer.key") }
    })
  )
})
afterAll(async () => {
  await server.close()
  await fixture.stop()
  await untrusted.stop()
})

/** Well-formed probes go through the typed client; the bad requests below go raw. */
const validate = (payload: Parameters<typeof server.client.verification.validate>[0]["payload"]) =>
  server.client.verification.validate({ payload })
const validateRaw = (json: unknown) => request(`${server.url}/v1/validate`, { method: "POST", json })
const detailOf = (id: string) => it.run(server.client.resources.get({ path: { id: ResourceId.make(id) } }))

describe("POST /v1/validate", () => {
  test("probes a catalog resource now and answers the outcome, the decoded challenge and the new status", async () => {
    // Raw: the typed client would drop an internal field the server must not send.
    const { status, body } = await validateRaw({ resourceId: "paid" })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      resourceId: "paid",
      discovered: false,
      healthy: true,
      outcome: "healthy",
      status: "PAYMENT_VERIFIED",
      verificationLevel: 2,
      observation: { resourceId: "paid", httpStatus: 402, x402Version: 2, payTo: FIXTURE_PAY_TO, amount: "10000" },
      challenge: { x402Version: 2, accepts: [{ scheme: "exact", network: "stellar:testnet", payTo: FIXTURE_PAY_TO }] }
    })
    expect(body.observation.contradiction).toBeUndefined()
  })

  test("a price above the catalog's quarantines the resource, visible with the resource", async () => {
    expect(await it.run(validate({ resourceId: ResourceId.make("pricey") }))).toMatchObject({
      outcome: "healthy",
      status: "QUARANTINED"
    })
    const detail = await detailOf("pricey")
    expect(detail.resource.status).toBe("QUARANTINED")
    expect(detail.transitions[0]).toMatchObject({ from: "VALIDATING", to: "QUARANTINED" })
    expect(detail.transitions[0]?.reason).toContain("price above the advertised")
  })

  test("a URL outside the catalog becomes a DISCOVERED resource with its observation", async () => {
    const body = await it.run(validate({ url: fixture.url("/paid/elsewhere"), method: "POST" }))
    expect(body).toMatchObject({ discovered: true, outcome: "healthy", status: "PAYMENT_VERIFIED" })
    const detail = await detailOf(body.resourceId)
    expect(detail.resource).toMatchObject({ url: fixture.url("/paid/elsewhere"), method: "POST" })
    expect(detail.metrics.observationCount).toBe(1)
    expect(detail.transitions.map((t) => [t.from, t.to])).toEqual([["DISCOVERED", "PAYMENT_VERIFIED"]])
  })

  test("bad requests: unknown resource 404, neither or both fields 400, refused targets 400 with the reason", async () => {
    expect(await refusal(validate({ resourceId: ResourceId.make("nope") }))).toMatchObject({ error: "NOT_FOUND" })
    const neither = await validateRaw({ method: "GET" })
    expect(neither.status).toBe(400)
    expect(neither.body.message).toContain("resourceId")
    const both = await validateRaw({ resourceId: "paid", url: fixture.url("/paid") })
    expect(both.status).toBe(400)
    const before = untrusted.hits.get("paid") ?? 0
    const refused = await refusal(validate({ url: untrusted.url("/paid") }))
    expect(refused).toMatchObject({ error: "TARGET_REFUSED", message: expect.stringContaining("non-public") })
    expect(untrusted.hits.get("paid") ?? 0).toBe(before)
    const scheme = await refusal(validate({ url: "file:///etc/passwd" }))
    expect(scheme).toMatchObject({ error: "TARGET_REFUSED", message: expect.stringContaining("only http and https") })
    const { resources } = await it.run(server.client.resources.list({ urlParams: {} }))
    expect(resources.some((r) => r.resource.url.startsWith(untrusted.origin))).toBe(false)
  })
})

describe("GET metrics and observations", () => {
  test("metrics come from the recorded probes; an unknown resource is 404", async () => {
    await it.run(validate({ resourceId: ResourceId.make("paid") }))
    const body = await it.run(server.client.verification.metrics({ path: { id: ResourceId.make("paid") } }))
    expect(body).toMatchObject({
      resourceId: "paid",
      availability24h: 1,
      paymentInterfaceSuccessRate: 1,
      reliability: 1,
      transactionSuccessRate: 0
    })
    expect(body.observationCount).toBeGreaterThanOrEqual(1)
    expect(body.confidence).toBeGreaterThan(0)
    expect(body.observedPriceUsd).toBe(0.001)
    expect(await refusal(server.client.verification.metrics({ path: { id: ResourceId.make("nope") } }))).toMatchObject({
      error: "NOT_FOUND"
    })
  })

  test("observations page newest first with limit and before; bad cursors are 400", async () => {
    // A second observation within the interval: the schedule's (a caller's validation would not be recorded).
    await runScoped(
      server.runtime,
      Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("paid")))
    )
    const observations = (
      id: string,
      urlParams: Parameters<typeof server.client.verification.observations>[0]["urlParams"]
    ) => server.client.verification.observations({ path: { id: ResourceId.make(id) }, urlParams })
    const first = await it.run(observations("paid", { limit: 1 }))
    expect(first.observations).toHaveLength(1)
    expect(first.nextBefore).toBe(first.observations[0]!.id)
    const next = await it.run(observations("paid", { limit: 1, before: first.nextBefore! }))
    expect(next.observations).toHaveLength(1)
    expect(next.observations[0]!.observedAt <= first.observations[0]!.observedAt).toBe(true)
    expect(next.observations[0]!.id).not.toBe(first.observations[0]!.id)
    // Cursors the contract refuses go raw.
    expect((await request(`${server.url}/v1/resources/paid/observations?before=yesterday`)).status).toBe(400)
    expect((await request(`${server.url}/v1/resources/paid/observations?limit=0`)).status).toBe(400)
    expect(await refusal(observations("nope", {}))).toMatchObject({ error: "NOT_FOUND" })
  })
})
