import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { uptoOption, option, payee, record } from "./fixtures/evidence.js"
import { request, startServer, testConfig } from "./support/server.js"

/** A catalog nobody probes in this test: every resource is without evidence. */
const catalog = [
  record("alpha.inspect", [option({ amountUsd: 0.001, amount: "10000", payTo: payee(1) })], { provider: "alpha" }),
  record("beta.inspect", [uptoOption(0.001, 0.005, { payTo: payee(2) }), option({ network: "stellar:pubnet", payTo: payee(2) })], {
    provider: "beta"
  }),
  record("gamma.changes", [option({ payTo: payee(3) })], { provider: "gamma", capabilities: ["rwa.changes"] })
]

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(testConfig({ catalog }))
})
afterAll(() => server.close())

const post = (path: string, json: unknown) => request(`${server.url}${path}`, { method: "POST", json })

describe("POST /v1/policies/evaluate", () => {
  test("a resource without evidence is INSUFFICIENT_DATA with the reason, no API key needed", async () => {
    const { status, body } = await post("/v1/policies/evaluate", { policy: {}, resourceId: "alpha.inspect" })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      decision: "INSUFFICIENT_DATA",
      reasons: [{ code: "NO_VERIFICATION_EVIDENCE", message: "no probe evidence exists for this resource" }],
      resourceId: "alpha.inspect",
      optionIndex: 0
    })
    expect(Number.isNaN(Date.parse(body.evaluatedAt))).toBe(false)
  })

  test("an upto ceiling over the cap is DENY naming both figures, even before any evidence", async () => {
    const { status, body } = await post("/v1/policies/evaluate", {
      policy: { maxPricePerRequestUsd: 0.002 },
      resourceId: "beta.inspect",
      optionIndex: 0
    })
    expect(status).toBe(200)
    expect(body.decision).toBe("DENY")
    expect(body.reasons).toEqual([
      { code: "PRICE_EXCEEDS_LIMIT", message: "worst-case spend (the upto ceiling) 0.005 USD exceeds the limit 0.002 USD" },
      { code: "NO_VERIFICATION_EVIDENCE", message: "no probe evidence exists for this resource" }
    ])
  })

  test("an unknown resource is 404, an option out of range 400", async () => {
    const missing = await post("/v1/policies/evaluate", { policy: {}, resourceId: "nope" })
    expect(missing).toMatchObject({ status: 404, body: { error: "NOT_FOUND", message: 'no resource with id "nope"' } })
    const range = await post("/v1/policies/evaluate", { policy: {}, resourceId: "beta.inspect", optionIndex: 2 })
    expect(range.status).toBe(400)
    expect(range.body).toEqual({
      error: "BAD_REQUEST",
      message: 'optionIndex 2 is out of range: resource "beta.inspect" has 2 payment option(s), indexes 0 to 1'
    })
  })

  test("a malformed policy is 400 naming every bad field, never a 500", async () => {
    const { status, body } = await post("/v1/policies/evaluate", {
      policy: { minConfidence: 2, networks: ["ethereum:mainnet"], maxPricePerRequestUsd: -1 },
      resourceId: "alpha.inspect"
    })
    expect(status).toBe(400)
    expect(Object.keys(body).sort()).toEqual(["error", "message"])
    for (const field of ["minConfidence", "networks", "maxPricePerRequestUsd"]) expect(body.message).toContain(field)
    const missingId = await post("/v1/policies/evaluate", { policy: {} })
    expect(missingId.status).toBe(400)
    expect(missingId.body.message).toContain("resourceId")
  })
})

describe("POST /v1/routes", () => {
  test("candidates are the resources with the capability, each rejected with all its codes when nothing can be paid", async () => {
    const { status, body } = await post("/v1/routes", {
      capability: "rwa.inspect",
      constraints: { maxPricePerRequestUsd: 0.002, networks: ["stellar:testnet"] },
      optimizeFor: "cheapest"
    })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      capability: "rwa.inspect",
      optimizeFor: "cheapest",
      policy: { maxPricePerRequestUsd: 0.002, networks: ["stellar:testnet"] },
      selected: null,
      fallbacks: [],
      message: 'no provider of "rwa.inspect" satisfies the policy: all 2 candidate(s) were rejected'
    })
    expect(body.rejected.map((r: { resourceId: string; codes: Array<string> }) => [r.resourceId, r.codes])).toEqual([
      ["alpha.inspect", ["NO_VERIFICATION_EVIDENCE"]],
      ["beta.inspect", ["PRICE_EXCEEDS_LIMIT", "NO_VERIFICATION_EVIDENCE", "NETWORK_NOT_ALLOWED"]]
    ])
  })

  test("optimizeFor defaults to balanced and the policy to none", async () => {
    const { status, body } = await post("/v1/routes", { capability: "rwa.changes" })
    expect(status).toBe(200)
    expect(body).toMatchObject({ optimizeFor: "balanced", policy: {}, selected: null })
    expect(body.rejected.map((r: { resourceId: string }) => r.resourceId)).toEqual(["gamma.changes"])
  })

  test("a bad request is 400 {error, message}", async () => {
    for (const bad of [{}, { capability: "rwa.inspect", optimizeFor: "fast" }, { capability: "RWA Inspect" }, { capability: "rwa.inspect", extra: 1 }]) {
      const { status, body } = await post("/v1/routes", bad)
      expect(status).toBe(400)
      expect(Object.keys(body).sort()).toEqual(["error", "message"])
    }
  })
})
