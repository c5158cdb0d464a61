import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { seededBuyer, settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { pollUntil } from "./support/poll.js"
import { facilitatorsAnswered, ledgerAt, request, startServer, testConfig } from "./support/server.js"

/**
 * What an outsider could once do to the evidence, tried over HTTP: lift a payee with one anonymous
 * validate, launder a denied provider through a second entry, and keep a payee's transaction
 * success rate at 1 whatever its settlements did.
 */
const ledger = startFixtureLedger()
const backend = startFacilitator({ ledger })
let seller: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

const withProvider = (id: string, provider: string, url: string) => ({ ...entry(id, url), provider: { id: provider, name: provider } })

beforeAll(async () => {
  seller = await startX402Fixture()
  const base = testConfig()
  server = await startServer(
    testConfig({
      facilitators: [{ id: "a", url: backend.url }],
      // Two listed entries of two providers pay the fixture's payee; nothing in the catalog pays anyone else.
      catalog: [withProvider("prov-c.paid", "prov-c", seller.url("/paid")), withProvider("prov-d.alias", "prov-d", seller.url("/paid/alias"))],
      probes: { ...base.probes, allowPrivateTargets: true },
      ledger: ledgerAt(ledger),
      // One buyer's payments are the evidence under test here (trust.level3.test.ts covers the threshold).
      verification: { ...base.verification, minDistinctPayers: 1 }
    })
  )
  await facilitatorsAnswered(server.url)
})
afterAll(async () => {
  await server.close()
  await seller.stop()
  await backend.stop()
  ledger.stop()
})

const validate = (json: unknown) => request(`${server.url}/v1/validate`, { method: "POST", json })
const settle = async (seed: number, servicePolicy?: Record<string, unknown>) => {
  const { payment, requirements } = await signedPayment(FIXTURE_PAY_TO, { buyer: seededBuyer(seed) })
  // The payment names what it pays for, so its evidence is about that one resource.
  const named = { ...payment, resource: { url: seller.url("/paid") } }
  return request(`${server.url}/x402/settle`, { method: "POST", json: settleBody(named, requirements, servicePolicy ? { servicePolicy } : {}) })
}

describe("evidence no caller can forge", () => {
  test("a validated URL outside the catalog is kept unlisted: its observations are returned, but it is no payee evidence and no candidate", async () => {
    const url = seller.url("/paid/elsewhere")
    const probed = await validate({ url })
    expect(probed).toMatchObject({ status: 200, body: { discovered: true, healthy: true } })
    const id: string = probed.body.resourceId

    // Nothing listed was ever probed: the payee named by that 402 is still unverified.
    const refused = await settle(81)
    expect(refused).toMatchObject({ status: 403, body: { error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" } })
    expect(backend.calls("/settle")).toBe(0)

    const detail = await request(`${server.url}/v1/resources/${id}`)
    expect(detail.body.listing).toEqual({ listed: false, source: "validate", trusted: false })
    const observations = await request(`${server.url}/v1/resources/${id}/observations`)
    expect(observations.body.observations.map((o: { id: string }) => o.id)).toEqual([probed.body.observation.id])
    const listed = (await request(`${server.url}/v1/resources`)).body.resources.map((r: { resource: { id: string } }) => r.resource.id)
    expect(listed).toEqual(["prov-c.paid", "prov-d.alias"])
    const searched = await request(`${server.url}/v1/search`, { method: "POST", json: { capability: "fixture.probe" } })
    expect(searched.body.resources.map((r: { resource: { id: string } }) => r.resource.id)).not.toContain(id)
    const route = await request(`${server.url}/v1/routes`, { method: "POST", json: { capability: "fixture.probe" } })
    expect([route.body.selected, ...route.body.rejected].filter(Boolean).map((c: { resourceId: string }) => c.resourceId)).not.toContain(id)
  })

  test("denyProviders fails closed: a second listed entry paying the same address does not launder a denied provider", async () => {
    for (const resourceId of ["prov-c.paid", "prov-d.alias"]) expect((await validate({ resourceId })).body.healthy).toBe(true)
    const denied = await settle(82, { denyProviders: ["prov-c"] })
    expect(denied).toMatchObject({ status: 403, body: { error: "POLICY_DENIED", code: "PROVIDER_DENIED" } })
    expect(denied.body.message).toContain('provider "prov-c"')
    expect(backend.calls("/settle")).toBe(0)
    // Without the denial the same payee is paid.
    expect((await settle(83)).status).toBe(200)
    expect(backend.calls("/settle")).toBe(1)
  })

  test("a settle the facilitator answers success: false counts against the transaction success rate", async () => {
    const metrics = async () => (await request(`${server.url}/v1/resources/prov-c.paid`)).body
    const confirmed = await pollUntil("the earlier settlement is confirmed", metrics, (d) => d.economicEvidence?.[0]?.state === "confirmed")
    expect(confirmed.metrics.transactionSuccessRate).toBe(1)
    backend.setMode("invalid")
    const failed = await settle(84)
    expect(failed).toMatchObject({ status: 200, body: { success: false } })
    const after = await metrics()
    expect(after.economicEvidence[0]).toMatchObject({ source: "settlement", state: "failed", transactionHash: null })
    expect(after.metrics.transactionSuccessRate).toBe(0.5)
    backend.setMode("succeed")
  })
})
