import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { HTTPFacilitatorClient } from "@x402/core/http"
import { withBazaar } from "@x402/extensions/bazaar"
import type { CatalogEntry } from "../src/domain/resources.js"
import { advertised } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { OTHER_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { request, startServer, testConfig } from "./support/server.js"

/**
 * The catalog searched: 17 weather resources (a prime, so no page size divides it), three of
 * them paid to another payee, one an MCP tool; a few others that must not match "weather".
 */
const WEATHER = 17
let fixture: X402Fixture
let server: Awaited<ReturnType<typeof startServer>>

const weather = (i: number): CatalogEntry => {
  const base = entry(
    `w${String(i).padStart(2, "0")}`,
    fixture.url(`/paid/w${i}`),
    i % 6 === 1 ? [{ ...advertised, payTo: OTHER_PAY_TO }] : [advertised]
  )
  return {
    ...base,
    resource: {
      ...base.resource,
      type: i === 4 ? "mcp" : "http",
      // One resource names weather in its title, the rest only in the description: relevance orders them.
      name: i === 9 ? "Weather now" : `Service ${i}`,
      description: `hourly weather for city ${i}`,
      serviceName: "Sky Data",
      tags: ["forecast", "climate", "Forecast"],
      iconUrl: i === 2 ? "http://127.0.0.1/icon.png" : "https://icons.example/sky.png"
    }
  }
}

beforeAll(async () => {
  fixture = await startX402Fixture()
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: [
        ...Array.from({ length: WEATHER }, (_, i) => weather(i)),
        entry("other-a", fixture.url("/paid/a")),
        entry("other-b", fixture.url("/paid/b"))
      ],
      probes: { ...base.probes, trustedOrigins: [fixture.origin], timeoutMs: 2000 }
    })
  )
})
afterAll(async () => {
  await server.close()
  await fixture.stop()
})

/** The stock 2.27 facilitator client with the stock bazaar client, pointed at Sextant's `/x402`: no cast, one core. */
const stock = () => withBazaar(new HTTPFacilitatorClient({ url: `${server.url}/x402` })).extensions.bazaar

type Search = Parameters<ReturnType<typeof stock>["search"]>[0]

/** Every page of a search through the stock client, following `pagination.cursor`. */
const allPages = async (params: Search) => {
  const pages = []
  let cursor: string | undefined
  for (let i = 0; i < 50; i++) {
    const page = await stock().search({ ...params, ...(cursor === undefined ? {} : { cursor }) })
    pages.push(page)
    const next = page.pagination?.cursor ?? null
    expect(page.partialResults).toBe(next !== null)
    if (next === null) return pages
    cursor = next
  }
  throw new Error("the cursor never ended")
}

describe("GET /x402/discovery/search through the stock 2.27 bazaar client", () => {
  test("ranks by the full-text index and pages cover every match exactly once", async () => {
    const pages = await allPages({ query: "weather", limit: 4 })
    const ids = pages.flatMap((p) => p.resources.map((r) => (r as any).metadata.resourceId as string))
    expect(ids.length).toBe(WEATHER)
    expect(new Set(ids).size).toBe(WEATHER)
    // The name outranks a description; ties go by id.
    expect(ids[0]).toBe("w09")
    expect(ids.slice(1)).toEqual([...ids.slice(1)].sort())
    expect(pages.map((p) => p.resources.length)).toEqual([4, 4, 4, 4, 1])
    expect(pages[0]!.x402Version).toBe(2)
    expect(pages[0]!.pagination?.limit).toBe(4)
  })

  test("each item carries the listing's evidence metadata and the sanitised service metadata", async () => {
    const [page] = await allPages({ query: "weather", limit: 200 })
    const listed = (await stock().listResources({ limit: 1000 })).items
    for (const item of page!.resources) {
      const same = listed.find((l) => l.resource === item.resource)
      expect((item as any).metadata).toEqual((same as any).metadata)
      expect(item.accepts).toEqual(same!.accepts)
      expect(item.serviceName).toBe("Sky Data")
      // Upstream's sanitiser: case-insensitive duplicates dropped.
      expect(item.tags).toEqual(["forecast", "climate"])
    }
    const icons = Object.fromEntries(page!.resources.map((r) => [(r as any).metadata.resourceId, r.iconUrl]))
    // A loopback icon is dropped, as upstream drops it; the rest are kept.
    expect(icons.w02).toBeUndefined()
    expect(icons.w03).toBe("https://icons.example/sky.png")
  })

  test("tags are searchable, ranked as capabilities", async () => {
    const [page] = await allPages({ query: "climate", limit: 200 })
    expect(page!.resources.length).toBe(WEATHER)
    const [none] = await allPages({ query: "zzzunknown" })
    expect(none!.resources).toEqual([])
    expect(none!.partialResults).toBe(false)
  })

  test("type, payTo, network, scheme and extensions filters hold", async () => {
    const match = async (params: Omit<Search, "query">) =>
      (await allPages({ query: "weather", limit: 200, ...params })).flatMap((p) =>
        p.resources.map((r) => (r as any).metadata.resourceId as string)
      )
    expect(await match({ type: "mcp" })).toEqual(["w04"])
    expect((await match({ type: "http" })).length).toBe(WEATHER - 1)
    expect(await match({ payTo: OTHER_PAY_TO })).toEqual(["w01", "w07", "w13"])
    expect((await match({ network: "stellar:testnet", scheme: "exact" })).length).toBe(WEATHER)
    expect(await match({ network: "eip155:8453" })).toEqual([])
    expect(await match({ scheme: "upto" })).toEqual([])
    // No resource here came through a payment's bazaar extension; an unknown key matches nothing.
    expect(await match({ extensions: "bazaar" })).toEqual([])
    expect(await match({ extensions: "offer-receipt" })).toEqual([])
  })

  test("a cursor of another search, a foreign cursor and a bad limit are 400 with {error, message}", async () => {
    const [first] = await allPages({ query: "weather", limit: 20 }).then((pages) => pages)
    expect(first!.pagination?.cursor).toBeNull()
    const paged = await stock().search({ query: "weather", limit: 2 })
    const cursor = paged.pagination!.cursor!
    for (const path of [
      `/x402/discovery/search?query=climate&limit=2&cursor=${cursor}`,
      "/x402/discovery/search?query=weather&cursor=bm90LWEtY3Vyc29y",
      "/x402/discovery/search?query=weather&limit=0",
      "/x402/discovery/search?limit=5"
    ]) {
      const answer = await request(`${server.url}${path}`)
      expect(answer.status).toBe(400)
      expect(answer.body).toMatchObject({ error: "INVALID_REQUEST", message: expect.any(String) })
    }
  })

  test("is in /openapi.json", async () => {
    const doc = (await request(`${server.url}/openapi.json`)).body
    expect(Object.keys(doc.paths)).toContain("/x402/discovery/search")
  })
})

describe("service metadata end to end", () => {
  test("/v1/resources serves what the sanitiser kept; the status page shows it", async () => {
    const detail = (await request(`${server.url}/v1/resources/w02`)).body
    expect(detail.resource).toMatchObject({ serviceName: "Sky Data", tags: ["forecast", "climate"] })
    expect(detail.resource.iconUrl).toBeUndefined()
    const page = await fetch(`${server.url}/status/resources/w03`)
    const text = await page.text()
    expect(text).toContain("Sky Data")
    expect(text).toContain("forecast · climate")
    expect(text).toContain("https://icons.example/sky.png")
  })
})
