import { apiKeyHash } from "../src/http/authLive.js"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HTTPFacilitatorClient } from "@x402/core/server"
import { Keypair } from "@stellar/stellar-sdk"
import { facilitatorsAnswered, request, startServer, testConfig } from "./support/server.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"

const API_KEY = "agent-one-secret-key"
const OTHER_KEY = "agent-two-secret-key"
const BACKEND_KEY = "backend-a-secret"
const NOT_IN_CATALOG = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const VERIFIED_PAYEE = "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57"
const RESOURCE_ID = "seller.rwa.inspect"
const auth = { authorization: `Bearer ${API_KEY}` }
const otherAuth = { authorization: `Bearer ${OTHER_KEY}` }

const backend = startFacilitator()
/** A seller paid to VERIFIED_PAYEE, probed once so settlement may pay it. */
const resource = startPaidResource({ payTo: VERIFIED_PAYEE, amount: "10000" })
let server: Awaited<ReturnType<typeof startServer>>

/** The stock client of @x402/core, as a resource server would configure it against this service. */
const stockClient = (apiKey: string | null) =>
  new HTTPFacilitatorClient({
    url: `${server.url}/x402`,
    ...(apiKey === null
      ? {}
      : {
          createAuthHeaders: () => {
            const headers = { Authorization: `Bearer ${apiKey}` }
            return Promise.resolve({ verify: headers, settle: headers, supported: headers })
          }
        })
  })

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      facilitators: [{ id: "a", url: backend.url, apiKey: BACKEND_KEY }],
      apiKeys: [
        { principal: "agent-1", sha256: apiKeyHash(API_KEY) },
        { principal: "agent-2", sha256: apiKeyHash(OTHER_KEY) }
      ],
      catalog: [resource.catalogEntry(RESOURCE_ID)],
      probes: { ...base.probes, allowPrivateTargets: true }
    })
  )
  // The pool polls at start; wait for that answer to land.
  await facilitatorsAnswered(server.url)
  await resource.useFacilitator(`${server.url}/x402`, API_KEY)
  const probe = await request(`${server.url}/v1/validate`, { method: "POST", headers: auth, json: { resourceId: RESOURCE_ID } })
  if (probe.body.healthy !== true) throw new Error(`the seller's resource did not probe healthy: ${JSON.stringify(probe.body)}`)
})
afterAll(async () => {
  await server.close()
  await backend.stop()
  await resource.stop()
})

describe("x402 endpoints over HTTP", () => {
  test("the stock HTTPFacilitatorClient reads /x402/supported (open, no key needed)", async () => {
    const supported = await stockClient(null).getSupported()
    expect(supported.kinds).toEqual([
      { x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }
    ])
    expect(supported.signers["stellar:*"]).toHaveLength(1)
  })

  test("the stock client verifies through the service; the backend gets its own key, never the caller's", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const payment = await buildExactPayment(requirements)
    const answer = await stockClient(API_KEY).verify(payment, requirements)
    expect(answer).toMatchObject({ isValid: true, payer: expect.stringMatching(/^G/) })
    const forwarded = backend.requests.filter((r) => r.path === "/verify")
    expect(forwarded).toHaveLength(1)
    expect(forwarded[0]?.authorization).toBe(`Bearer ${BACKEND_KEY}`)
    expect(forwarded[0]?.body).toMatchObject({ x402Version: 2, paymentRequirements: requirements })
  })

  test("verify and settle need the API key when keys are configured: 401 without it", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements)
    for (const path of ["/x402/verify", "/x402/settle"]) {
      const { status, body: error } = await request(`${server.url}${path}`, { method: "POST", json: body })
      expect(status).toBe(401)
      expect(error).toMatchObject({ error: "UNAUTHORIZED" })
    }
    expect((await request(`${server.url}/x402/facilitators`)).status).toBe(401)
    expect((await request(`${server.url}/x402/settlements/x`)).status).toBe(401)
  })

  test("422 for a kind no backend supports", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG, network: "stellar:pubnet" })
    const payment = await buildExactPayment(exactRequirements({ payTo: NOT_IN_CATALOG }))
    const { status, body } = await request(`${server.url}/x402/verify`, {
      method: "POST",
      headers: auth,
      json: { x402Version: 2, paymentPayload: payment, paymentRequirements: requirements }
    })
    expect(status).toBe(422)
    expect(body).toMatchObject({ error: "UNSUPPORTED_PAYMENT_KIND", message: expect.stringContaining("stellar:pubnet") })
  })

  test("settle refuses a payee without verification evidence with 403, before any backend call", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements, { amountUsd: 0.001 })
    const { status, body: error } = await request(`${server.url}/x402/settle`, { method: "POST", headers: auth, json: body })
    expect(status).toBe(403)
    expect(error).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
    expect(backend.calls("/settle")).toBe(0)
  })

  test("a malformed stock body is a 400 naming every bad field", async () => {
    const { status, body } = await request(`${server.url}/x402/settle`, {
      method: "POST",
      headers: auth,
      json: { x402Version: "2", paymentPayload: 5, paymentRequirements: "x" }
    })
    expect(status).toBe(400)
    for (const field of ["x402Version", "paymentPayload", "paymentRequirements"]) expect(body.message).toContain(field)
  })

  test("a malformed servicePolicy is a 400 naming the field", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements, { servicePolicy: { maxPricePerRequestUsd: "cheap" } })
    const { status, body: error } = await request(`${server.url}/x402/settle`, { method: "POST", headers: auth, json: body })
    expect(status).toBe(400)
    expect(error.message).toContain("maxPricePerRequestUsd")
  })

  test("an unknown servicePolicy field is a 400 naming it, not a limit silently dropped", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements, { servicePolicy: { maxPriceperRequestUsd: 0.0001 } })
    const { status, body: error } = await request(`${server.url}/x402/settle`, { method: "POST", headers: auth, json: body })
    expect(status).toBe(400)
    expect(error.message).toContain("maxPriceperRequestUsd")
  })

  test("/x402/facilitators shows each backend's health and capability count, never its apiKey", async () => {
    const { status, body } = await request(`${server.url}/x402/facilitators`, { headers: auth })
    expect(status).toBe(200)
    expect(body.facilitators).toEqual([
      {
        id: "a",
        url: `${backend.url}/`,
        healthy: true,
        lastCheckedAt: expect.any(String),
        lastError: null,
        capabilityCount: 1,
        kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }]
      }
    ])
    expect(JSON.stringify(body)).not.toContain(BACKEND_KEY)
  })

  test("an unknown settlement is 404", async () => {
    const { status, body } = await request(`${server.url}/x402/settlements/nope`, { headers: auth })
    expect(status).toBe(404)
    expect(body).toMatchObject({ error: "NOT_FOUND" })
  })

  test("Idempotency-Key: empty is 400; the same key from two principals is two requests; a principal reads only its own settlements", async () => {
    const requirements = exactRequirements({ payTo: VERIFIED_PAYEE })
    const payments = await Promise.all([1, 2, 3].map((n) => buildExactPayment(requirements, { buyer: Keypair.fromRawEd25519Seed(Buffer.alloc(32, 60 + n)) })))
    const [first, second, third] = payments.map((p) => settleBody(p, requirements))
    const settle = (json: unknown, headers: Record<string, string>) =>
      request(`${server.url}/x402/settle`, { method: "POST", headers, json })

    const empty = await settle(first, { ...auth, "idempotency-key": "" })
    expect(empty.status).toBe(400)
    expect(empty.body.message).toContain("idempotency-key")

    expect((await settle(first, { ...auth, "idempotency-key": "order-1" })).status).toBe(200)
    expect((await settle(second, { ...otherAuth, "idempotency-key": "order-1" })).status).toBe(200)
    const reused = await settle(third, { ...auth, "idempotency-key": "order-1" })
    expect(reused.status).toBe(409)
    expect(reused.body.error).toBe("IDEMPOTENCY_KEY_REUSED")
    const id = /settlement ([0-9a-f-]{36})/.exec(reused.body.message)?.[1]
    expect(id).toBeDefined()

    const own = await request(`${server.url}/x402/settlements/${id}`, { headers: auth })
    expect(own.status).toBe(200)
    expect(own.body).toMatchObject({ id, principal: "agent-1", idempotencyKey: "order-1", state: "settled" })
    const stranger = await request(`${server.url}/x402/settlements/${id}`, { headers: otherAuth })
    expect(stranger.status).toBe(404)
    expect(JSON.stringify(stranger.body)).not.toContain("agent-1")

    // The operator's list: newest first, scoped to the caller's principal, filtered by state.
    const mine = await request(`${server.url}/x402/settlements`, { headers: auth })
    expect(mine.status).toBe(200)
    expect(mine.body.settlements.map((r: any) => r.principal)).toEqual(["agent-1"])
    expect(mine.body.settlements[0]).toMatchObject({ id, state: "settled" })
    const theirs = await request(`${server.url}/x402/settlements?state=settled&limit=10`, { headers: otherAuth })
    expect(theirs.body.settlements.map((r: any) => r.principal)).toEqual(["agent-2"])
    const none = await request(`${server.url}/x402/settlements?state=indeterminate`, { headers: auth })
    expect(none.body.settlements).toEqual([])
    const older = await request(`${server.url}/x402/settlements?before=${encodeURIComponent(mine.body.settlements[0].createdAt)}`, { headers: auth })
    expect(older.body.settlements).toEqual([])
    const bad = await request(`${server.url}/x402/settlements?state=lost&limit=0`, { headers: auth })
    expect(bad.status).toBe(400)
    expect(bad.body.message).toContain("state")
    expect(bad.body.message).toContain("limit")
    expect((await request(`${server.url}/x402/settlements`)).status).toBe(401)
  })
})
