import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { encodePaymentRequiredHeader } from "@x402/core/http"
import type { PaymentRequired } from "@x402/core/types"
import { Effect, Option } from "effect"
import { ServicesLive } from "../src/app.js"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { option, payee, record } from "./fixtures/evidence.js"
import { observation } from "./fixtures/observations.js"
import { runWith } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * Preflight over HTTP against a real SQLite store whose evidence came through the real recorder:
 * alpha was probed (a valid challenge paying payee 1), beta, on the same origin, never was.
 */
const catalog = [
  record("alpha.inspect", [option({ amountUsd: 0.001, amount: "10000", payTo: payee(1) })], { provider: "alpha" }),
  record("beta.inspect", [option({ payTo: payee(2) })], { provider: "beta" }),
  // More of the origin than a preflight reads by id, and after them one paying payee 3, probed.
  ...["c1", "c2", "c3", "c4", "c5"].map((id) =>
    record(`${id}.inspect`, [option({ payTo: payee(2) })], { provider: id })
  ),
  record("zeta.inspect", [option({ payTo: payee(3) })], { provider: "zeta" })
]
const alphaUrl = catalog[0]!.resource.url

const seedAlpha = (database: string) => {
  const probed = (id: string, payTo: string) =>
    Effect.gen(function* () {
      const entry = Option.getOrThrow(yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(ResourceId.make(id))))
      yield* (yield* EvidenceRecorder).recordObservation(
        entry,
        observation(Date.now() - 60_000, { resourceId: entry.resource.id, url: entry.resource.url, payTo })
      )
    })
  return runWith(
    ServicesLive(testConfig({ catalog, database })),
    Effect.zipRight(probed("alpha.inspect", payee(1)), probed("zeta.inspect", payee(3)))
  )
}

const folder = mkdtempSync(join(tmpdir(), "sextant-preflight-http-"))
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

/** A stock v2 challenge as a seller at `url` would send it. */
const challenge = (url: string, payTo: string, amount = "10000"): PaymentRequired => ({
  x402Version: 2,
  resource: { url, description: "inspect", mimeType: "application/json" },
  accepts: [
    {
      scheme: "exact",
      network: "stellar:testnet",
      asset: TESTNET_USDC,
      amount,
      payTo,
      maxTimeoutSeconds: 60,
      extra: { areFeesSponsored: true }
    }
  ]
})

const preflight = (json: unknown) => request(`${server.url}/v1/preflight`, { method: "POST", json })

describe("POST /v1/preflight", () => {
  test("the raw PAYMENT-REQUIRED header of the probed URL paying the observed payee: ALLOW, with the evidence read, no API key", async () => {
    const { status, body } = await preflight({
      paymentRequiredHeader: encodePaymentRequiredHeader(challenge(alphaUrl, payee(1)))
    })
    expect(status).toBe(200)
    expect(body).toMatchObject({
      verdict: "ALLOW",
      reasons: [],
      url: alphaUrl,
      origin: "http://127.0.0.1:9",
      rating: "URL"
    })
    expect(body.judged).toEqual({
      optionIndex: 0,
      scheme: "exact",
      network: "stellar:testnet",
      asset: TESTNET_USDC,
      payTo: payee(1),
      amount: "10000",
      amountUsd: 0.001
    })
    // The URL's entry, then the origin's first five by id (none pays payee 1 but alpha).
    expect(body.evidence.map((e: { resourceId: string; match: string }) => [e.resourceId, e.match])).toEqual([
      ["alpha.inspect", "url"],
      ["beta.inspect", "origin"],
      ...["c1", "c2", "c3", "c4"].map((id) => [`${id}.inspect`, "origin"])
    ])
    expect(body.evidence[0]).toMatchObject({ validChallengeSeen: true, trusted: true, observedPriceUsd: 0.001 })
  })

  test("the decoded challenge naming a payTo alpha's probes never saw: DENY PAYEE_NOT_OBSERVED naming the observed payee", async () => {
    const { status, body } = await preflight({ paymentRequired: challenge(alphaUrl, payee(7)) })
    expect(status).toBe(200)
    expect(body.verdict).toBe("DENY")
    const reason = body.reasons.find((r: { code: string }) => r.code === "PAYEE_NOT_OBSERVED")
    expect(reason).toMatchObject({ severity: "DENY", resourceId: "alpha.inspect" })
    expect(reason.message).toContain(payee(1))
  })

  test("the chosen requirements and a policy: the policy's cap and a doubled price both DENY", async () => {
    const { body } = await preflight({
      url: alphaUrl,
      requirements: challenge(alphaUrl, payee(1), "20000").accepts[0],
      policy: { maxPricePerRequestUsd: 0.0015 }
    })
    expect(body.verdict).toBe("DENY")
    expect(body.reasons.map((r: { code: string }) => r.code)).toEqual([
      "PRICE_ABOVE_ADVERTISED",
      "PRICE_ABOVE_OBSERVED",
      "PRICE_EXCEEDS_LIMIT"
    ])
    expect(body.judged.optionIndex).toBeNull()
  })

  test("an unknown URL answers with what is known: its origin's entries, or UNRATED; never a 404", async () => {
    const sameOrigin = await preflight({ paymentRequired: challenge("http://127.0.0.1:9/new", payee(1)) })
    expect(sameOrigin.status).toBe(200)
    expect(sameOrigin.body).toMatchObject({ verdict: "WARN", rating: "ORIGIN" })
    expect(sameOrigin.body.reasons[0]).toMatchObject({
      code: "PAYEE_OBSERVED_AT_ORIGIN_ONLY",
      resourceId: "alpha.inspect"
    })
    const unknown = await preflight({ paymentRequired: challenge("http://127.0.0.1:8/elsewhere", payee(1)) })
    expect(unknown.status).toBe(200)
    expect(unknown.body).toMatchObject({ verdict: "DENY", rating: "UNRATED", evidence: [] })
    const allowed = await preflight({
      paymentRequired: challenge("http://127.0.0.1:8/elsewhere", payee(1)),
      policy: { allowUnknownSellers: true }
    })
    expect(allowed.body).toMatchObject({ verdict: "WARN", rating: "UNRATED" })
  })

  test("the origin's entry paying the payee is read however many entries the origin has before it", async () => {
    const { body } = await preflight({ paymentRequired: challenge("http://127.0.0.1:9/new", payee(3)) })
    expect(body).toMatchObject({ verdict: "WARN", rating: "ORIGIN" })
    expect(body.reasons[0]).toMatchObject({ code: "PAYEE_OBSERVED_AT_ORIGIN_ONLY", resourceId: "zeta.inspect" })
    expect(body.evidence.map((e: { resourceId: string }) => e.resourceId)).toContain("zeta.inspect")
  })

  test("bad input is a 400 with {error, message}: no option, no URL, a header that does not decode, an amount that is not base units", async () => {
    const bodies = [
      { url: alphaUrl },
      { requirements: challenge(alphaUrl, payee(1)).accepts[0] },
      { paymentRequiredHeader: "not base64 json" },
      { url: alphaUrl, requirements: { ...challenge(alphaUrl, payee(1)).accepts[0], amount: "0.01" } },
      { url: "ftp://x", paymentRequired: challenge(alphaUrl, payee(1)) }
    ]
    for (const json of bodies) {
      const { status, body } = await preflight(json)
      expect(status).toBe(400)
      expect(body).toMatchObject({ error: "INVALID_REQUEST", message: expect.any(String) })
    }
  })

  test("is described in /openapi.json", async () => {
    const { body } = await request(`${server.url}/openapi.json`)
    expect(Object.keys(body.paths["/v1/preflight"])).toEqual(["post"])
    expect(body.components.schemas.PreflightAnswer).toBeDefined()
  })
})
