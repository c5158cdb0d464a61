import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Importer } from "../src/catalog/Importer.js"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture } from "./fixtures/x402Resource.js"
import { runScoped } from "./support/effectTest.js"
import { facilitatorsAnswered, request, startServer, testConfig } from "./support/server.js"

/**
 * A stranger turning a quarantine against someone else's payee. On the rules before the trust
 * model, any listed resource naming a `payTo` that was QUARANTINED refused every settle to it: the
 * attacker served a 402 naming the victim's address at the victim's price, registered it in open
 * mode (listed on its first healthy probe), then asked twice as much; the next probe quarantined
 * the attacker's entry and every settle to the victim was answered 403 QUARANTINED. Now an
 * automatic quarantine of a permissionless entry stays that entry's own.
 */
const facilitator = startFacilitator()
const target = await startX402Fixture()
/** The attacker's origin: relays the fixture's official challenge at the victim's price, or at twice it. */
let raised = false
const attacker = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) => fetch(target.url(raised ? "/pricey/attack" : "/paid/attack"), { method: req.method })
})
const attackUrl = `http://127.0.0.1:${attacker.port}/steal`
const victimUrl = target.url("/paid/victim")
let server: Awaited<ReturnType<typeof startServer>>

let ledger = 3_000_000
const settle = async (paidUrl?: string) => {
  const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
  const payment = await buildExactPayment(requirements, { validUntilLedger: ++ledger })
  const named = paidUrl === undefined ? payment : { ...payment, resource: { url: paidUrl } }
  return request(`${server.url}/x402/settle`, { method: "POST", json: settleBody(named, requirements) })
}

const probe = (resourceId: string) =>
  runScoped(
    server.runtime,
    Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make(resourceId)))
  )

beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: [entry("victim", victimUrl)],
      facilitators: [{ id: "fixture", url: facilitator.url }],
      probes: { ...base.probes, allowPrivateTargets: true }
    })
  )
  await probe("victim")
})

afterAll(async () => {
  await server.close()
  await facilitator.stop()
  await target.stop()
  attacker.stop(true)
})

describe("a stranger's quarantine against another's payee", () => {
  test("the same through an imported Bazaar item, with no key: the victim's settles still pass", async () => {
    raised = false
    const file = join(mkdtempSync(join(tmpdir(), "sextant-trust-import-")), "items.json")
    const url = `http://127.0.0.1:${attacker.port}/imported`
    const accepts = [
      {
        scheme: "exact",
        network: "stellar:testnet",
        amount: FIXTURE_AMOUNT,
        asset: TESTNET_USDC,
        payTo: FIXTURE_PAY_TO,
        maxTimeoutSeconds: 60,
        extra: {}
      }
    ]
    writeFileSync(
      file,
      JSON.stringify({ items: [{ resource: url, type: "http", x402Version: 2, accepts, lastUpdated: 1_764_000_000 }] })
    )
    const summary = await runScoped(
      server.runtime,
      Effect.flatMap(Importer, (i) => i.pull({ id: "public-bazaar", location: file }))
    )
    expect(summary).toMatchObject({ added: 1 })
    const [imported] = await runScoped(
      server.runtime,
      Effect.flatMap(CatalogWritesRepo, (r) => r.bySource("import:public-bazaar"))
    )
    expect((await probe(imported!.id)).healthy).toBe(true)
    raised = true
    expect((await probe(imported!.id)).status).toBe("QUARANTINED")
    const answer = await settle(victimUrl)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true })
  })

  test("the attacker's registered entry naming the victim's payTo is quarantined; the victim's settles still pass", async () => {
    raised = false
    const registered = await request(`${server.url}/v1/resources/register`, {
      method: "POST",
      json: { url: attackUrl }
    })
    expect(registered.status).toBe(200)
    expect(registered.body.routes[0]).toMatchObject({ outcome: "listed" })
    const attackId: string = registered.body.routes[0].resourceId
    raised = true
    const seen = await probe(attackId)
    expect(seen.status).toBe("QUARANTINED")
    const stored = await request(`${server.url}/v1/resources/${attackId}`)
    expect(stored.body.resource.status).toBe("QUARANTINED")
    expect(stored.body.listing).toMatchObject({ source: "registration", trusted: false })

    // Named or not, a settle to the victim is judged without the stranger's quarantine.
    for (const paid of [victimUrl, undefined]) {
      const answer = await settle(paid)
      expect(answer.status).toBe(200)
      expect(answer.body).toMatchObject({ success: true })
    }
    // A payment naming the attacker's entry is judged on it, and refused.
    const through = await settle(attackUrl)
    expect(through.status).toBe(403)
    expect(through.body).toMatchObject({ error: "POLICY_DENIED", code: "QUARANTINED" })
  })
})

describe("a stranger's registration never opens settles to a payee", () => {
  /** A service whose catalog pays nobody: the payee has no trusted entry. */
  const bare = async (untrustedPayeeStanding: boolean) => {
    const base = testConfig()
    const service = await startServer(
      testConfig({
        catalog: [],
        facilitators: [{ id: "fixture", url: facilitator.url }],
        probes: { ...base.probes, allowPrivateTargets: true },
        ingestion: { ...base.ingestion, untrustedPayeeStanding }
      })
    )
    await facilitatorsAnswered(service.url)
    return service
  }
  const settleOn = async (service: Awaited<ReturnType<typeof startServer>>) => {
    const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
    const payment = await buildExactPayment(requirements, { validUntilLedger: ++ledger })
    return request(`${service.url}/x402/settle`, { method: "POST", json: settleBody(payment, requirements) })
  }
  const register = async (service: Awaited<ReturnType<typeof startServer>>, path: string) => {
    const registered = await request(`${service.url}/v1/resources/register`, {
      method: "POST",
      json: { url: target.url(path) }
    })
    expect(registered.status).toBe(200)
    expect(registered.body.routes[0]).toMatchObject({ outcome: "listed" })
    const stored = await request(`${service.url}/v1/resources/${registered.body.routes[0].resourceId}`)
    expect(stored.body.listing).toMatchObject({ source: "registration", trusted: false })
  }

  test("an anonymous registration of a URL naming the payee leaves its settles 403 NO_VERIFICATION_EVIDENCE", async () => {
    const service = await bare(false)
    try {
      expect((await settleOn(service)).body).toMatchObject({ error: "POLICY_DENIED", code: "NO_VERIFICATION_EVIDENCE" })
      await register(service, "/paid/registered")
      const after = await settleOn(service)
      expect(after.status).toBe(403)
      expect(after.body).toMatchObject({
        error: "POLICY_DENIED",
        code: "NO_VERIFICATION_EVIDENCE",
        message: expect.stringContaining("trusted")
      })
    } finally {
      await service.close()
    }
  })

  test("an operator who opts in to untrusted standing (ingestion.untrustedPayeeStanding) gets the settle through", async () => {
    const service = await bare(true)
    try {
      expect((await settleOn(service)).body).toMatchObject({ code: "NO_VERIFICATION_EVIDENCE" })
      await register(service, "/paid/opted-in")
      expect(await settleOn(service)).toMatchObject({ status: 200, body: { success: true } })
    } finally {
      await service.close()
    }
  })
})
