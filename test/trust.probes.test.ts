import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { MAX_REGISTRATION_REQUESTS, MAX_ROUTES } from "../src/catalog/Registration.js"
import { ResourceId } from "../src/domain/ids.js"
import { Prober } from "../src/verification/Prober.js"
import { entry } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it, runScoped } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * Probes a caller could bend, on the rules before the trust model:
 * - `/v1/validate {resourceId, method}` probed a competitor's GET resource with the caller's method
 *   and recorded the answer as its evidence; at 60 calls a minute the caller's probes outvoted the
 *   schedule's and pushed it to DEGRADED;
 * - a registration probed every route its OpenAPI named (any method, up to 100, six hops each), and
 *   a path key `//<other origin>/x` resolved off the registered origin and was probed there.
 */
const paidOperation = (summary: string) => ({
  summary,
  "x-payment-info": { protocols: ["x402"], price: { mode: "fixed", currency: "USD", amount: "0.001" } },
  responses: { "200": { description: "the data" }, "402": { description: "Payment Required" } }
})

let target: X402Fixture
let victim: X402Fixture
let hostile: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>
const hitsOf = (fixture: X402Fixture) => [...fixture.hits.values()].reduce((a, b) => a + b, 0)

beforeAll(async () => {
  target = await startX402Fixture()
  victim = await startX402Fixture()
  const victimHost = new URL(victim.origin).host
  hostile = await startX402Fixture({
    documents: () => ({
      "/openapi.json": {
        openapi: "3.1.0",
        info: { title: "a hundred routes", version: "1" },
        paths: {
          ...Object.fromEntries(
            Array.from({ length: 100 }, (_, i) => [`/paid/r${i}`, { get: paidOperation(`route ${i}`) }])
          ),
          "/paid/wipe": { delete: paidOperation("a DELETE") },
          "/paid/replace": { put: paidOperation("a PUT") },
          "/paid/amend": { patch: paidOperation("a PATCH") },
          [`//${victimHost}/paid/escape`]: { get: paidOperation("off the origin") },
          [`/\\${victimHost}/paid/backslash`]: { get: paidOperation("off the origin, spelled with a backslash") }
        }
      }
    })
  })
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: [entry("competitor", target.url("/paid/competitor")), entry("busy", target.url("/paid/busy"))],
      // The default allowance: callers add one observation per interval beside the schedule's.
      probes: { ...base.probes, allowPrivateTargets: true, validationsPerInterval: 1 },
      limits: { ...base.limits, validate: null, register: null }
    })
  )
  await runScoped(
    server.runtime,
    Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("competitor")))
  )
})

afterAll(async () => {
  await server.close()
  await Promise.all([target.stop(), victim.stop(), hostile.stop()])
})

describe("probes no caller can bend", () => {
  test("200 hostile validations with DELETE (and 200 more with the catalog method, each recorded or 429) leave a competitor PAYMENT_VERIFIED on the schedule's evidence", async () => {
    // Raw: the contract refuses a write method, so the typed client cannot send one.
    for (let i = 0; i < 200; i++) {
      const hostileCall = await request(`${server.url}/v1/validate`, {
        method: "POST",
        json: { resourceId: "competitor", method: "DELETE" }
      })
      expect(hostileCall.status).toBe(400)
      expect(hostileCall.body.error).toBe("INVALID_REQUEST")
    }
    const byUrl = await request(`${server.url}/v1/validate`, {
      method: "POST",
      json: { url: target.url("/paid/competitor"), method: "PUT" }
    })
    expect(byUrl.status).toBe(400)
    const { verification, resources } = server.client
    // Every validation answered 200 is recorded; beyond the allowance (one beside the schedule's
    // probe per interval) it is 429 with Retry-After, never answered and silently dropped.
    // Raw: a 429's Retry-After header is part of what is checked, and the typed client hides headers.
    const answers = []
    for (let i = 0; i < 200; i++)
      answers.push(await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "competitor" } }))
    const recorded = answers.filter((a) => a.status === 200).length
    expect(recorded).toBe(1)
    for (const refused of answers.filter((a) => a.status !== 200)) {
      expect(refused.status).toBe(429)
      expect(refused.body.error).toBe("RATE_LIMITED")
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    }
    const metrics = await it.run(verification.metrics({ path: { id: ResourceId.make("competitor") } }))
    // The schedule's probe and the one validation answered 200.
    expect(metrics.observationCount).toBe(1 + recorded)
    const resource = await it.run(resources.get({ path: { id: ResourceId.make("competitor") } }))
    expect(resource.resource.status).toBe("PAYMENT_VERIFIED")
  })

  test("ten validations in one interval, sent at once: each adds an observation or is answered 429 with Retry-After", async () => {
    const count = async () =>
      (await it.run(server.client.verification.metrics({ path: { id: ResourceId.make("busy") } }))).observationCount
    const before = await count()
    // Raw: each 429's Retry-After header is checked, and the typed client hides headers.
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "busy" } })
      )
    )
    const ok = answers.filter((a) => a.status === 200)
    for (const a of answers.filter((x) => x.status !== 200)) {
      expect(a).toMatchObject({ status: 429, body: { error: "RATE_LIMITED" } })
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThan(0)
    }
    expect(ok.length).toBeGreaterThan(0)
    // Every 200 is an observation; with no schedule probe yet, callers get the schedule's share and their own.
    expect(await count()).toBe(before + ok.length)
    expect(ok.length).toBeLessThanOrEqual(2)
  })

  test("a registration naming 100 routes, write methods and //victim path keys sends at most the stated requests, none off the origin", async () => {
    const before = hitsOf(hostile)
    const registered = await it.run(server.client.registration.register({ payload: { origin: hostile.origin } }))
    const sent = hitsOf(hostile) - before
    expect(sent).toBeLessThanOrEqual(MAX_REGISTRATION_REQUESTS)
    expect(hitsOf(victim)).toBe(0)
    const routes = registered.routes
    expect(routes.filter((r) => r.outcome === "listed")).toHaveLength(MAX_ROUTES)
    for (const method of ["DELETE", "PUT", "PATCH"]) {
      expect(routes.find((r) => r.method === method)).toMatchObject({
        outcome: "skipped",
        detail: `${method}: registration probes only GET, HEAD and POST routes`
      })
    }
    expect(routes.filter((r) => r.detail?.includes("is not a path on") === true)).toHaveLength(2)
    // Raw: the contract refuses a write method.
    const one = await request(`${server.url}/v1/resources/register`, {
      method: "POST",
      json: { url: hostile.url("/paid/x"), method: "DELETE" }
    })
    expect(one.status).toBe(400)
  })
})
