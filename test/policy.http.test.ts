import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Option } from "effect"
import { ServicesLive } from "../src/app.js"
import { ResourceId } from "../src/domain/ids.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { option, payee, record, uptoOption } from "./fixtures/evidence.js"
import { observation } from "./fixtures/observations.js"
import { runWith } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

/** Only alpha has evidence (one healthy probe, recorded before the server starts); the rest have none. */
const catalog = [
  record("alpha.inspect", [option({ amountUsd: 0.001, amount: "10000", payTo: payee(1) })], { provider: "alpha" }),
  record(
    "beta.inspect",
    [uptoOption(0.001, 0.005, { payTo: payee(2) }), option({ network: "stellar:pubnet", payTo: payee(2) })],
    {
      provider: "beta"
    }
  ),
  record("gamma.changes", [option({ payTo: payee(3) })], { provider: "gamma", capabilities: ["rwa.changes"] }),
  record("delta.free", [], { provider: "delta", capabilities: ["rwa.free"] })
]

/** Records a healthy probe of alpha through the real recorder, into the store the server then opens. */
const seedAlpha = (database: string) =>
  runWith(
    ServicesLive(testConfig({ catalog, database })),
    Effect.gen(function* () {
      const alpha = Option.getOrThrow(
        yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(ResourceId.make("alpha.inspect")))
      )
      const recorder = yield* EvidenceRecorder
      yield* recorder.recordObservation(
        alpha,
        observation(Date.now() - 60_000, {
          resourceId: ResourceId.make("alpha.inspect"),
          url: alpha.resource.url,
          payTo: payee(1)
        })
      )
    })
  )

const folder = mkdtempSync(join(tmpdir(), "sextant-policy-http-"))
let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  const database = join(folder, "sextant.db")
  await seedAlpha(database)
  server = await startServer(testConfig({ catalog, database }))
})
afterAll(async () => {
  await server.close()
  rmSync(folder, { recursive: true, force: true })
})

const post = (path: string, json: unknown) => request(`${server.url}${path}`, { method: "POST", json })

describe("POST /v1/policies/evaluate", () => {
  test("a probed resource within the policy is ALLOW, no API key needed", async () => {
    const { status, body } = await post("/v1/policies/evaluate", {
      policy: { maxPricePerRequestUsd: 0.001, assets: ["USDC"], networks: ["stellar:testnet"] },
      resourceId: "alpha.inspect"
    })
    expect(status).toBe(200)
    expect(body).toMatchObject({ decision: "ALLOW", reasons: [], resourceId: "alpha.inspect", optionIndex: 0 })
    expect(Math.abs(Date.parse(body.evaluatedAt) - Date.now())).toBeLessThan(60_000)
  })

  test("the same resource under a policy it breaks is DENY with every reason", async () => {
    const { body } = await post("/v1/policies/evaluate", {
      policy: { maxPricePerRequestUsd: 0.0005, requireTransactionVerified: true, denyProviders: ["alpha"] },
      resourceId: "alpha.inspect"
    })
    expect(body.decision).toBe("DENY")
    expect(body.reasons.map((r: { code: string }) => r.code)).toEqual([
      "PRICE_EXCEEDS_LIMIT",
      "PROVIDER_DENIED",
      "TRANSACTION_NOT_VERIFIED"
    ])
  })

  test("a resource without evidence is INSUFFICIENT_DATA with the reason", async () => {
    const { status, body } = await post("/v1/policies/evaluate", {
      policy: {},
      resourceId: "beta.inspect",
      optionIndex: 1
    })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      decision: "INSUFFICIENT_DATA",
      reasons: [{ code: "NO_VERIFICATION_EVIDENCE", message: "no probe evidence exists for this resource" }],
      resourceId: "beta.inspect",
      optionIndex: 1
    })
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
      {
        code: "PRICE_EXCEEDS_LIMIT",
        message: "worst-case spend (the upto ceiling) 0.005 USD exceeds the limit 0.002 USD"
      },
      { code: "NO_VERIFICATION_EVIDENCE", message: "no probe evidence exists for this resource" }
    ])
  })

  test("an unknown resource is 404, an option out of range 400", async () => {
    const missing = await post("/v1/policies/evaluate", { policy: {}, resourceId: "nope" })
    expect(missing).toMatchObject({ status: 404, body: { error: "NOT_FOUND", message: 'no resource with id "nope"' } })
    const range = await post("/v1/policies/evaluate", { policy: {}, resourceId: "beta.inspect", optionIndex: 2 })
    expect(range.status).toBe(400)
    expect(range.body).toEqual({
      error: "INVALID_REQUEST",
      message: 'optionIndex 2 is out of range: resource "beta.inspect" has 2 payment option(s), indexes 0 to 1'
    })
  })

  test("a resource with no payment option is a 200 DENY with NO_PAYMENT_OPTION, not a bad request", async () => {
    const { status, body } = await post("/v1/policies/evaluate", { policy: {}, resourceId: "delta.free" })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      decision: "DENY",
      reasons: [{ code: "NO_PAYMENT_OPTION", message: 'resource "delta.free" offers no payment option' }],
      resourceId: "delta.free",
      optionIndex: null
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
  test("selects the probed candidate and rejects the other with all its codes", async () => {
    const constraints = { maxPricePerRequestUsd: 0.002, networks: ["stellar:testnet"] }
    const { status, body } = await post("/v1/routes", {
      capability: "rwa.inspect",
      constraints,
      optimizeFor: "cheapest"
    })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      capability: "rwa.inspect",
      optimizeFor: "cheapest",
      policy: constraints,
      selected: {
        rank: 1,
        resourceId: "alpha.inspect",
        providerId: "alpha",
        optionIndex: 0,
        worstCaseUsd: 0.001,
        score: 1
      },
      fallbacks: [],
      message: "selected alpha.inspect option 0 (score 1) from 2 candidate(s): 0 fallback(s), 1 rejected"
    })
    expect(body.selected.metrics).toMatchObject({ resourceId: "alpha.inspect", observationCount: 1 })
    expect(body.rejected.map((r: { resourceId: string; codes: Array<string> }) => [r.resourceId, r.codes])).toEqual([
      ["beta.inspect", ["PRICE_EXCEEDS_LIMIT", "NO_VERIFICATION_EVIDENCE", "NETWORK_NOT_ALLOWED"]]
    ])
  })

  test("nothing surviving answers 200 with a null selection and a message", async () => {
    const { status, body } = await post("/v1/routes", {
      capability: "rwa.inspect",
      constraints: { schemes: ["upto"], networks: ["stellar:testnet"] }
    })
    expect(status).toBe(200)
    expect(body.selected).toBeNull()
    expect(body.message).toBe(
      'no provider of "rwa.inspect" satisfies the policy: all 2 candidate(s) were rejected, 1 of them for lack of current evidence (INSUFFICIENT_DATA)'
    )
  })

  test("optimizeFor defaults to balanced and the policy to none", async () => {
    const { status, body } = await post("/v1/routes", { capability: "rwa.changes" })
    expect(status).toBe(200)
    expect(body).toMatchObject({ optimizeFor: "balanced", policy: {}, selected: null })
    expect(body.rejected.map((r: { resourceId: string }) => r.resourceId)).toEqual(["gamma.changes"])
  })

  test("a bad request is 400 {error, message}", async () => {
    for (const bad of [
      {},
      { capability: "rwa.inspect", optimizeFor: "fast" },
      { capability: "RWA Inspect" },
      { capability: "rwa.inspect", extra: 1 }
    ]) {
      const { status, body } = await post("/v1/routes", bad)
      expect(status).toBe(400)
      expect(Object.keys(body).sort()).toEqual(["error", "message"])
    }
  })
})
