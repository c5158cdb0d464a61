import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import type { AgentPolicy } from "../src/domain/policy.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture } from "./fixtures/x402Resource.js"
import { runScoped } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * The payee check on the stored evidence (the live reader's shortlist query), with more resources
 * paying the payee than the shortlist's few that could pass: the resource that decides each case
 * comes last in id order, so only the whole set, or the shortlist's own rule for it, finds it.
 * - z-bad: the only resource of provider "bad";
 * - z-sure: probed four times, the only one whose confidence passes `minConfidence: 0.2` (one
 *   probe gives 0.08, four 0.28 at the default sample scale of 12);
 * - z-withdrawn: quarantined by an operator in the last test.
 */
const facilitator = startFacilitator()
const target = await startX402Fixture()
const GOOD = Array.from({ length: 20 }, (_, i) => `a-good-${String(i).padStart(2, "0")}`)
const catalog = [...GOOD, "z-bad", "z-sure", "z-withdrawn"].map((id, i) => ({
  ...entry(id, target.url(`/paid/${i}`)),
  provider: { id: id === "z-bad" ? "bad" : "good", name: id }
}))
const OPERATOR_KEY = "payee-test-operator-key"
const operator = { authorization: `Bearer ${OPERATOR_KEY}` }
let server: Awaited<ReturnType<typeof startServer>>

const probe = async (resourceId: string) => {
  const probed = await request(`${server.url}/v1/validate`, { method: "POST", headers: operator, json: { resourceId } })
  expect(probed.status).toBe(200)
}

let ledger = 2_000_000
/** Settles a fresh payment to the payee under `servicePolicy`. */
const settle = async (servicePolicy?: AgentPolicy) => {
  const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
  const payment = await buildExactPayment(requirements, { validUntilLedger: ++ledger })
  return request(`${server.url}/x402/settle`, {
    method: "POST",
    headers: operator,
    json: settleBody(payment, requirements, servicePolicy === undefined ? {} : { servicePolicy })
  })
}

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog,
      facilitators: [{ id: "fixture", url: facilitator.url }],
      apiKeys: [{ principal: "ops", sha256: apiKeyHash(OPERATOR_KEY), role: "operator" }],
      probes: { ...base.probes, allowPrivateTargets: true },
      limits: { ...base.limits, validate: null }
    })
  )
  for (const e of catalog) await probe(e.resource.id)
  // More probes than a caller's validations may record (one per interval): the schedule's own.
  for (let i = 0; i < 3; i++)
    await runScoped(
      server.runtime,
      Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("z-sure")))
    )
})

afterAll(async () => {
  await server.close()
  await facilitator.stop()
  await target.stop()
})

describe("settle: the payee check on stored evidence", () => {
  test("a provider denied by the policy is refused though its one resource is the last of the payee's; without that policy the payee is paid", async () => {
    const denied = await settle({ denyProviders: ["bad"] })
    expect(denied.status).toBe(403)
    expect(denied.body).toMatchObject({ error: "POLICY_DENIED", code: "PROVIDER_DENIED" })
    expect(denied.body.message).toContain("z-bad")
    const paid = await settle()
    expect(paid.status).toBe(200)
    expect(paid.body).toMatchObject({ success: true })
  })

  test("the one resource that passes the policy is the last of the payee's: the payee is paid; when none passes, the refusal names the limit", async () => {
    const paid = await settle({ minConfidence: 0.2 })
    expect(paid.status).toBe(200)
    expect(paid.body).toMatchObject({ success: true })
    const refused = await settle({ minConfidence: 0.5 })
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ error: "POLICY_DENIED", code: "CONFIDENCE_LIMIT" })
    expect(refused.body.message).toStartWith("servicePolicy: confidence ")
    expect(refused.body.message).toEndWith("is below the minimum 0.5")
  })

  test("the last resource paying the payee quarantined by an operator refuses the payee, whatever else pays it", async () => {
    const quarantined = await request(`${server.url}/v1/resources/z-withdrawn/quarantine`, {
      method: "POST",
      headers: operator,
      json: { reason: "payee reported compromised" }
    })
    expect(quarantined.status).toBe(200)
    const refused = await settle()
    expect(refused.status).toBe(403)
    expect(refused.body).toMatchObject({ error: "POLICY_DENIED", code: "QUARANTINED" })
    expect(refused.body.message).toContain("z-withdrawn")
  })
})
