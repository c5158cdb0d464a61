import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HTTPFacilitatorClient } from "@x402/core/http"
import { withBazaar } from "@x402/extensions/bazaar"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

/** 23 listed resources (a prime, so no page size divides it), plus one unlisted URL found by /v1/validate. */
const LISTED = 23
let fixture: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  fixture = await startX402Fixture()
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: Array.from({ length: LISTED }, (_, i) =>
        entry(`r${String(i).padStart(2, "0")}`, fixture.url(`/paid/${i}`))
      ),
      probes: { ...base.probes, trustedOrigins: [fixture.origin], timeoutMs: 2000 }
    })
  )
  // Unlisted: a URL someone validated never shows in discovery.
  const validate = (payload: { url: string } | { resourceId: string }) =>
    it.run(
      server.client.verification.validate({
        payload: "resourceId" in payload ? { resourceId: ResourceId.make(payload.resourceId) } : payload
      })
    )
  expect((await validate({ url: fixture.url("/paid/unlisted") })).discovered).toBe(true)
  expect((await validate({ resourceId: "r03" })).healthy).toBe(true)
})
afterAll(async () => {
  await server.close()
  await fixture.stop()
})

/** The stock facilitator client, extended with the stock bazaar client, pointed at Sextant's `/x402`. */
const stockClient = () => withBazaar(new HTTPFacilitatorClient({ url: `${server.url}/x402` }) as any)

describe("GET /x402/discovery/resources through the stock bazaar client", () => {
  test("lists the listed catalog unchanged, in the x402 v2 shape, with the evidence in metadata", async () => {
    const page = await stockClient().extensions.bazaar.listResources({ type: "http" })
    expect(page.x402Version).toBe(2)
    expect(page.pagination).toEqual({ limit: 100, offset: 0, total: LISTED })
    const catalog = (await it.run(server.client.resources.list({ urlParams: {} }))).resources
    expect(page.items.map((i: any) => i.resource)).toEqual(catalog.map((r) => r.resource.url))
    expect(page.items.map((i: any) => i.resource)).not.toContain(fixture.url("/paid/unlisted"))
    const unprobed = page.items.find((i: any) => i.metadata.resourceId === "r00")!
    expect(unprobed).toMatchObject({
      type: "http",
      x402Version: 2,
      accepts: [
        {
          scheme: "exact",
          network: "stellar:testnet",
          amount: FIXTURE_AMOUNT,
          asset: TESTNET_USDC,
          payTo: FIXTURE_PAY_TO,
          maxTimeoutSeconds: 60,
          extra: { areFeesSponsored: true }
        }
      ],
      metadata: {
        status: "DISCOVERED",
        verificationLevel: 0,
        reliability: 0,
        p95LatencyMs: null,
        confidence: 0,
        lastVerified: null
      }
    })
    expect(typeof unprobed.lastUpdated).toBe("number")
    const probed = page.items.find((i: any) => i.metadata.resourceId === "r03")!
    expect(probed.metadata).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2, reliability: 1 })
    expect(probed.metadata.lastVerified).toEqual(expect.any(String))
    expect(probed.metadata.confidence).toBeGreaterThan(0)
    expect(probed.accepts[0]).toMatchObject({
      payTo: FIXTURE_PAY_TO,
      amount: FIXTURE_AMOUNT,
      network: "stellar:testnet"
    })
  })

  test("paging with the stock client covers every listed resource exactly once", async () => {
    const client = stockClient()
    const seen: Array<string> = []
    for (let offset = 0; ; offset += 5) {
      const page = await client.extensions.bazaar.listResources({ limit: 5, offset })
      expect(page.pagination).toEqual({ limit: 5, offset, total: LISTED })
      if (page.items.length === 0) break
      seen.push(...page.items.map((i: any) => i.metadata.resourceId))
    }
    expect(seen.length).toBe(LISTED)
    expect(new Set(seen).size).toBe(LISTED)
    expect(seen).toEqual([...seen].sort())
  })

  test("filters by type and network the way the bazaar client sends them", async () => {
    const client = stockClient()
    expect((await client.extensions.bazaar.listResources({ type: "mcp" })).pagination.total).toBe(0)
    expect((await client.extensions.bazaar.listResources({ network: "eip155:8453" })).items).toEqual([])
    expect(
      (await client.extensions.bazaar.listResources({ network: "stellar:testnet", payTo: FIXTURE_PAY_TO })).pagination
        .total
    ).toBe(LISTED)
  })

  test("a bad limit or offset is INVALID_REQUEST naming the parameter, never a 500", async () => {
    // Raw: limits and offsets the contract refuses.
    for (const query of ["limit=0", "limit=1001", "limit=abc", "limit=2.5", "offset=-1", "offset=x"]) {
      const { status, body } = await request(`${server.url}/x402/discovery/resources?${query}`)
      expect(status).toBe(400)
      expect(body.error).toBe("INVALID_REQUEST")
      expect(body.message).toContain(query.split("=")[0]!)
    }
    const max = await it.run(server.client.discovery.resources({ urlParams: { limit: 1000, offset: 20 } }))
    expect(max.items.length).toBe(LISTED - 20)
  })

  test("is declared in /openapi.json", async () => {
    // Raw: the document itself is not an endpoint of the contract.
    const spec = (await request(`${server.url}/openapi.json`)).body
    const op = spec.paths["/x402/discovery/resources"].get
    expect(op.parameters.map((p: any) => p.name)).toEqual(expect.arrayContaining(["type", "limit", "offset"]))
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(["200", "400"]))
  })
})
