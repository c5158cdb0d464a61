import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { Prober } from "../src/verification/Prober.js"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { request, startServer, testConfig } from "./support/server.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { ResourceId } from "../src/domain/ids.js"

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

const validate = (json: unknown) => request(`${server.url}/v1/validate`, { method: "POST", json })

describe("POST /v1/validate", () => {
  test("probes a catalog resource now and answers the outcome, the decoded challenge and the new status", async () => {
    const { status, body } = await validate({ resourceId: "paid" })
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
    const { body } = await validate({ resourceId: "pricey" })
    expect(body).toMatchObject({ outcome: "healthy", status: "QUARANTINED" })
    const detail = await request(`${server.url}/v1/resources/pricey`)
    expect(detail.body.resource.status).toBe("QUARANTINED")
    expect(detail.body.transitions[0]).toMatchObject({ from: "VALIDATING", to: "QUARANTINED" })
    expect(detail.body.transitions[0].reason).toContain("price above the advertised")
  })

  test("a URL outside the catalog becomes a DISCOVERED resource with its observation", async () => {
    const { status, body } = await validate({ url: fixture.url("/paid/elsewhere"), method: "POST" })
    expect(status).toBe(200)
    expect(body).toMatchObject({ discovered: true, outcome: "healthy", status: "PAYMENT_VERIFIED" })
    const detail = await request(`${server.url}/v1/resources/${body.resourceId}`)
    expect(detail.status).toBe(200)
    expect(detail.body.resource).toMatchObject({ url: fixture.url("/paid/elsewhere"), method: "POST" })
    expect(detail.body.metrics.observationCount).toBe(1)
    expect(detail.body.transitions.map((t: { from: string; to: string }) => [t.from, t.to])).toEqual([
      ["DISCOVERED", "PAYMENT_VERIFIED"]
    ])
  })

  test("bad requests: unknown resource 404, neither or both fields 400, refused targets 400 with the reason", async () => {
    const unknown = await validate({ resourceId: "nope" })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error).toBe("NOT_FOUND")
    const neither = await validate({ method: "GET" })
    expect(neither.status).toBe(400)
    expect(neither.body.message).toContain("resourceId")
    const both = await validate({ resourceId: "paid", url: fixture.url("/paid") })
    expect(both.status).toBe(400)
    const before = untrusted.hits.get("paid") ?? 0
    const refused = await validate({ url: untrusted.url("/paid") })
    expect(refused.status).toBe(400)
    expect(refused.body.error).toBe("TARGET_REFUSED")
    expect(refused.body.message).toContain("non-public")
    expect(untrusted.hits.get("paid") ?? 0).toBe(before)
    const scheme = await validate({ url: "file:///etc/passwd" })
    expect(scheme.status).toBe(400)
    expect(scheme.body.message).toContain("only http and https")
    const resources = await request(`${server.url}/v1/resources`)
    expect(resources.body.resources.some((r: { resource: { url: string } }) => r.resource.url.startsWith(untrusted.origin))).toBe(false)
  })
})

describe("GET metrics and observations", () => {
  test("metrics come from the recorded probes; an unknown resource is 404", async () => {
    await validate({ resourceId: "paid" })
    const { status, body } = await request(`${server.url}/v1/resources/paid/metrics`)
    expect(status).toBe(200)
    expect(body).toMatchObject({ resourceId: "paid", availability24h: 1, paymentInterfaceSuccessRate: 1, reliability: 1, transactionSuccessRate: 0 })
    expect(body.observationCount).toBeGreaterThanOrEqual(1)
    expect(body.confidence).toBeGreaterThan(0)
    expect(body.observedPriceUsd).toBe(0.001)
    expect((await request(`${server.url}/v1/resources/nope/metrics`)).status).toBe(404)
  })

  test("observations page newest first with limit and before; bad cursors are 400", async () => {
    // A second observation within the interval: the schedule's (a caller's validation would not be recorded).
    await server.runtime.runPromise(Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("paid"))))
    const first = await request(`${server.url}/v1/resources/paid/observations?limit=1`)
    expect(first.status).toBe(200)
    expect(first.body.observations).toHaveLength(1)
    expect(first.body.nextBefore).toBe(first.body.observations[0].id)
    const next = await request(`${server.url}/v1/resources/paid/observations?limit=1&before=${first.body.nextBefore}`)
    expect(next.body.observations).toHaveLength(1)
    expect(next.body.observations[0].observedAt <= first.body.observations[0].observedAt).toBe(true)
    expect(next.body.observations[0].id).not.toBe(first.body.observations[0].id)
    expect((await request(`${server.url}/v1/resources/paid/observations?before=yesterday`)).status).toBe(400)
    expect((await request(`${server.url}/v1/resources/paid/observations?limit=0`)).status).toBe(400)
    expect((await request(`${server.url}/v1/resources/nope/observations`)).status).toBe(404)
  })
})
