import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { ResourceId } from "../src/domain/ids.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { seededBuyer, settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { facilitatorsAnswered, ledgerAt, refusal, startServer, testConfig } from "./support/server.js"

/**
 * What an outsider could once do to the evidence, tried over HTTP: lift a payee with one anonymous
 * validate, launder a denied provider through a second entry, and keep a payee's transaction
 * success rate at 1 whatever its settlements did.
 */
const ledger = startFixtureLedger()
const backend = startFacilitator({ ledger })
let seller: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

const withProvider = (id: string, provider: string, url: string) => ({
  ...entry(id, url),
  provider: { id: provider, name: provider }
})

beforeAll(async () => {
  seller = await startX402Fixture()
  const base = testConfig()
  server = await startServer(
    testConfig({
      facilitators: [{ id: "a", url: backend.url }],
      // Two listed entries of two providers pay the fixture's payee; nothing in the catalog pays anyone else.
      catalog: [
        withProvider("prov-c.paid", "prov-c", seller.url("/paid")),
        withProvider("prov-d.alias", "prov-d", seller.url("/paid/alias"))
      ],
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

const validate = (payload: { resourceId: string } | { url: string }) =>
  it.run(
    server.client.verification.validate({
      payload: "resourceId" in payload ? { resourceId: ResourceId.make(payload.resourceId) } : payload
    })
  )
const settle = async (seed: number, servicePolicy?: Record<string, unknown>) => {
  const { payment, requirements } = await signedPayment(FIXTURE_PAY_TO, { buyer: seededBuyer(seed) })
  // The payment names what it pays for, so its evidence is about that one resource.
  const named = { ...payment, resource: { url: seller.url("/paid") } }
  return server.client.x402.settle({
    payload: settleBody(named, requirements, servicePolicy ? { servicePolicy } : {}),
    headers: {}
  })
}

describe("evidence no caller can forge", () => {
  test("a validated URL outside the catalog is kept unlisted: its observations are returned, but it is no payee evidence and no candidate", async () => {
    const url = seller.url("/paid/elsewhere")
    const probed = await validate({ url })
    expect(probed).toMatchObject({ discovered: true, healthy: true })
    const id = probed.resourceId

    // Nothing listed was ever probed: the payee named by that 402 is still unverified.
    const refused = await refusal(await settle(81))
    expect(refused).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
    expect(backend.calls("/settle")).toBe(0)

    const { resources, verification, policy } = server.client
    const detail = await it.run(resources.get({ path: { id } }))
    expect(detail.listing).toEqual({ listed: false, source: "validate", trusted: false })
    const observations = await it.run(verification.observations({ path: { id }, urlParams: {} }))
    expect(observations.observations.map((o) => o.id)).toEqual([probed.observation?.id])
    const listed = (await it.run(resources.list({ urlParams: {} }))).resources.map((r) => r.resource.id)
    expect<unknown>(listed).toEqual(["prov-c.paid", "prov-d.alias"])
    const searched = await it.run(resources.search({ payload: { capability: "fixture.probe" } }))
    expect(searched.resources.map((r) => r.resource.id)).not.toContain(id)
    const route = await it.run(policy.route({ payload: { capability: "fixture.probe" } }))
    expect([route.selected, ...route.rejected].flatMap((c) => (c === null ? [] : [c.resourceId]))).not.toContain(id)
  })

  test("denyProviders fails closed: a second listed entry paying the same address does not launder a denied provider", async () => {
    for (const resourceId of ["prov-c.paid", "prov-d.alias"])
      expect((await validate({ resourceId })).healthy).toBe(true)
    const denied = await refusal(await settle(82, { denyProviders: ["prov-c"] }))
    expect(denied).toMatchObject({
      error: "POLICY_DENIED",
      code: "PROVIDER_DENIED",
      message: expect.stringContaining('provider "prov-c"')
    })
    expect(backend.calls("/settle")).toBe(0)
    // Without the denial the same payee is paid.
    expect(await it.run(await settle(83))).toMatchObject({ success: true })
    expect(backend.calls("/settle")).toBe(1)
  })

  test("a settle the facilitator answers success: false counts against the transaction success rate", async () => {
    const metrics = () => it.run(server.client.resources.get({ path: { id: ResourceId.make("prov-c.paid") } }))
    const confirmed = await pollUntil(
      "the earlier settlement is confirmed",
      metrics,
      (d) => d.economicEvidence?.[0]?.state === "confirmed"
    )
    expect(confirmed.metrics.transactionSuccessRate).toBe(1)
    backend.setMode("invalid")
    expect(await it.run(await settle(84))).toMatchObject({ success: false })
    const after = await metrics()
    expect(after.economicEvidence[0]).toMatchObject({ source: "settlement", state: "failed", transactionHash: null })
    expect(after.metrics.transactionSuccessRate).toBe(0.5)
    backend.setMode("succeed")
  })
})
