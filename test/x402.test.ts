import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { HTTPFacilitatorClient } from "@x402/core/server"
import { ResourceId, SettlementId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import {
  facilitatorsAnswered,
  refusal,
  request,
  startServer,
  type TypedClient,
  testConfig,
  typedClient
} from "./support/server.js"

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
/** The typed client with agent-1's key, with agent-2's, and with none. Raw requests remain for bodies, headers and queries the contract refuses. */
let agent1: TypedClient
let agent2: TypedClient
let anonymous: TypedClient

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
  ;[agent1, agent2, anonymous] = await Promise.all([
    typedClient(server.url, auth),
    typedClient(server.url, otherAuth),
    typedClient(server.url)
  ])
  await resource.useFacilitator(`${server.url}/x402`, API_KEY)
  const probe = await it.run(agent1.verification.validate({ payload: { resourceId: ResourceId.make(RESOURCE_ID) } }))
  if (probe.healthy !== true) throw new Error(`the seller's resource did not probe healthy: ${JSON.stringify(probe)}`)
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
    // A payee with evidence: verify runs settle's checks first, payee evidence among them.
    const requirements = exactRequirements({ payTo: VERIFIED_PAYEE })
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
    const refused = await Promise.all([
      refusal(anonymous.x402.verify({ payload: body, headers: {} })),
      refusal(anonymous.x402.settle({ payload: body, headers: {} })),
      refusal(anonymous.x402.facilitators()),
      refusal(anonymous.x402.settlement({ path: { id: SettlementId.make("x") } }))
    ])
    for (const e of refused)
      expect("error" in e && { error: e.error, message: e.message }).toMatchObject({
        error: "UNAUTHORIZED",
        message: expect.any(String)
      })
    // Verify and settle say it as x402 refusals too, so a stock facilitator client reads the reason.
    expect(refused[0]).toMatchObject({ isValid: false, invalidReason: "unauthorized" })
    expect(refused[1]).toMatchObject({
      success: false,
      errorReason: "unauthorized",
      transaction: "",
      network: "stellar:testnet"
    })
  })

  test("422 for a kind no backend supports", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG, network: "stellar:pubnet" })
    const payment = await buildExactPayment(requirements)
    const error = await refusal(
      agent1.x402.verify({
        payload: { x402Version: 2, paymentPayload: payment, paymentRequirements: requirements },
        headers: {}
      })
    )
    expect(error).toMatchObject({
      error: "UNSUPPORTED_PAYMENT_KIND",
      message: expect.stringContaining("stellar:pubnet")
    })
    // A payment of another chain altogether: 422 too, not a 400 about its payee's address form.
    const evm = {
      ...requirements,
      network: "eip155:8453",
      payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
      asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
    }
    const other = await refusal(
      agent1.x402.verify({
        payload: { x402Version: 2, paymentPayload: payment, paymentRequirements: evm },
        headers: {}
      })
    )
    expect(other).toMatchObject({ error: "UNSUPPORTED_PAYMENT_KIND", invalidReason: "unsupported_scheme" })
  })

  test("settle refuses a payee without verification evidence with 403, before any backend call", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements, { amountUsd: 0.001 })
    const error = await refusal(agent1.x402.settle({ payload: body, headers: {} }))
    expect(error).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
    expect(backend.calls("/settle")).toBe(0)
  })

  // The next three send bodies the contract refuses, so they go raw.
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
    const body = settleBody(await buildExactPayment(requirements), requirements, {
      servicePolicy: { maxPricePerRequestUsd: "cheap" }
    })
    const { status, body: error } = await request(`${server.url}/x402/settle`, {
      method: "POST",
      headers: auth,
      json: body
    })
    expect(status).toBe(400)
    expect(error.message).toContain("maxPricePerRequestUsd")
  })

  test("an unknown servicePolicy field is a 400 naming it, not a limit silently dropped", async () => {
    const requirements = exactRequirements({ payTo: NOT_IN_CATALOG })
    const body = settleBody(await buildExactPayment(requirements), requirements, {
      servicePolicy: { maxPriceperRequestUsd: 0.0001 }
    })
    const { status, body: error } = await request(`${server.url}/x402/settle`, {
      method: "POST",
      headers: auth,
      json: body
    })
    expect(status).toBe(400)
    expect(error.message).toContain("maxPriceperRequestUsd")
  })

  test("/x402/facilitators shows each backend's health and capability count, never its apiKey", async () => {
    const body = await it.run(agent1.x402.facilitators())
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
    expect(await refusal(agent1.x402.settlement({ path: { id: SettlementId.make("nope") } }))).toMatchObject({
      error: "NOT_FOUND"
    })
  })

  test("Idempotency-Key: empty is 400; the same key from two principals is two requests; a principal reads only its own settlements", async () => {
    const requirements = exactRequirements({ payTo: VERIFIED_PAYEE })
    const payments = await Promise.all(
      [1, 2, 3].map((n) =>
        buildExactPayment(requirements, { buyer: Keypair.fromRawEd25519Seed(Buffer.alloc(32, 60 + n)) })
      )
    )
    const [first, second, third] = payments.map((p) => settleBody(p, requirements))
    // An empty key and an unknown state break the contract: those two go raw.
    const empty = await request(`${server.url}/x402/settle`, {
      method: "POST",
      headers: { ...auth, "idempotency-key": "" },
      json: first
    })
    expect(empty.status).toBe(400)
    expect(empty.body.message).toContain("idempotency-key")

    const orderOne = { "idempotency-key": "order-1" }
    expect(await it.run(agent1.x402.settle({ payload: first!, headers: orderOne }))).toMatchObject({
      success: true
    })
    expect(await it.run(agent2.x402.settle({ payload: second!, headers: orderOne }))).toMatchObject({
      success: true
    })
    const reused = await refusal(agent1.x402.settle({ payload: third!, headers: orderOne }))
    expect(reused).toMatchObject({ error: "IDEMPOTENCY_KEY_REUSED" })
    const id = /settlement ([0-9a-f-]{36})/.exec(reused.message)?.[1] ?? ""
    expect(id).toMatch(/^[0-9a-f-]{36}$/)

    const own = await it.run(agent1.x402.settlement({ path: { id: SettlementId.make(id) } }))
    expect(own).toMatchObject({ id, principal: "agent-1", idempotencyKey: "order-1", state: "settled" })
    const stranger = await refusal(agent2.x402.settlement({ path: { id: SettlementId.make(id) } }))
    expect(stranger).toMatchObject({ error: "NOT_FOUND" })
    expect(JSON.stringify(stranger)).not.toContain("agent-1")

    // The operator's list: newest first, scoped to the caller's principal, filtered by state.
    const mine = await it.run(agent1.x402.settlements({ urlParams: {} }))
    expect<unknown>(mine.settlements.map((r) => r.principal)).toEqual(["agent-1"])
    expect(mine.settlements[0]).toMatchObject({ id, state: "settled" })
    const theirs = await it.run(agent2.x402.settlements({ urlParams: { state: "settled", limit: 10 } }))
    expect<unknown>(theirs.settlements.map((r) => r.principal)).toEqual(["agent-2"])
    const none = await it.run(agent1.x402.settlements({ urlParams: { state: "indeterminate" } }))
    expect(none.settlements).toEqual([])
    const older = await it.run(agent1.x402.settlements({ urlParams: { before: mine.settlements[0]!.createdAt } }))
    expect(older.settlements).toEqual([])
    const bad = await request(`${server.url}/x402/settlements?state=lost&limit=0`, { headers: auth })
    expect(bad.status).toBe(400)
    expect(bad.body.message).toContain("state")
    expect(bad.body.message).toContain("limit")
    expect(await refusal(anonymous.x402.settlements({ urlParams: {} }))).toMatchObject({ error: "UNAUTHORIZED" })
  })
})
