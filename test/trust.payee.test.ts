import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect } from "effect"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Importer } from "../src/catalog/Importer.js"
import { TESTNET_USDC } from "../src/config.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"
import { ResourceId } from "../src/domain/ids.js"

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

const probe = (resourceId: string) => server.runtime.runPromise(Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make(resourceId))))

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
    const accepts = [{ scheme: "exact", network: "stellar:testnet", amount: FIXTURE_AMOUNT, asset: TESTNET_USDC, payTo: FIXTURE_PAY_TO, maxTimeoutSeconds: 60, extra: {} }]
    writeFileSync(file, JSON.stringify({ items: [{ resource: url, type: "http", x402Version: 2, accepts, lastUpdated: 1_764_000_000 }] }))
    const summary = await server.runtime.runPromise(Effect.flatMap(Importer, (i) => i.pull({ id: "public-bazaar", location: file })))
    expect(summary).toMatchObject({ added: 1 })
    const [imported] = await server.runtime.runPromise(Effect.flatMap(CatalogWritesRepo, (r) => r.bySource("import:public-bazaar")))
    expect((await probe(imported!.id)).healthy).toBe(true)
    raised = true
    expect((await probe(imported!.id)).status).toBe("QUARANTINED")
    const answer = await settle(victimUrl)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true })
  })

  test("the attacker's registered entry naming the victim's payTo is quarantined; the victim's settles still pass", async () => {
    raised = false
    const registered = await request(`${server.url}/v1/resources/register`, { method: "POST", json: { url: attackUrl } })
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
