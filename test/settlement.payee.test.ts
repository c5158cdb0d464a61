import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * The payee check on the stored evidence (the live reader's shortlist query), with more resources
 * paying the payee than the shortlist's 16 most promising: the one resource of a denied provider
 * sorts last, so only the provider rule can bring it into the shortlist.
 */
const facilitator = startFacilitator()
const target = await startX402Fixture()
const GOOD = Array.from({ length: 20 }, (_, i) => `a-good-${String(i).padStart(2, "0")}`)
const catalog = [...GOOD, "z-bad"].map((id, i) => ({
  ...entry(id, target.url(`/paid/${i}`)),
  provider: { id: id === "z-bad" ? "bad" : "good", name: id }
}))
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog,
      facilitators: [{ id: "fixture", url: facilitator.url }],
      probes: { ...base.probes, allowPrivateTargets: true },
      limits: { ...base.limits, validate: null }
    })
  )
  for (const e of catalog) {
    const probed = await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: e.resource.id } })
    expect(probed.status).toBe(200)
  }
})

afterAll(async () => {
  await server.close()
  await facilitator.stop()
  await target.stop()
})

describe("settle: the payee check on stored evidence", () => {
  test("a provider denied by the policy is refused though its resource is outside the 16 most promising; without that policy the payee is paid", async () => {
    const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
    const denied = await request(`${server.url}/x402/settle`, {
      method: "POST",
      json: settleBody(await buildExactPayment(requirements, { validUntilLedger: 2_000_001 }), requirements, {
        servicePolicy: { denyProviders: ["bad"] }
      })
    })
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ error: "POLICY_DENIED", code: "PROVIDER_DENIED" })
    expect(denied.body.message).toContain("z-bad")
    const paid = await request(`${server.url}/x402/settle`, {
      method: "POST",
      json: settleBody(await buildExactPayment(requirements, { validUntilLedger: 2_000_002 }), requirements)
    })
    expect(paid.status).toBe(200)
    expect(paid.body).toMatchObject({ success: true })
  })
})
