import { describe, expect, test } from "bun:test"
import { lastUpdatedMs, readItem } from "../src/catalog/bazaarItems.js"
import { mergeRoutes, routesFromOpenApi, routesFromWellKnown } from "../src/catalog/discoveryDocuments.js"
import { registrationOutcome } from "../src/catalog/registrationOutcome.js"
import { TESTNET_USDC } from "../src/config.js"
import { listingAfterProbe } from "../src/verification/probeListing.js"
import { FIXTURE_PAY_TO, OTHER_ASSET } from "./fixtures/x402Terms.js"

const HOUR = 3_600_000

describe("listingAfterProbe (pure)", () => {
  const listed = { listed: true, hold: null, unhealthySinceMs: null } as const
  test("a healthy probe lists what waits for one, never what an operator, a source or validate unlisted", () => {
    for (const hold of ["awaiting_probe", "unhealthy"] as const) {
      expect(
        listingAfterProbe({ listed: false, hold, unhealthySinceMs: 5 }, { healthy: true, atMs: 10 }, 72)
      ).toMatchObject({
        unhealthySinceMs: null,
        change: { listed: true, hold: null }
      })
    }
    for (const hold of ["operator", "source", "validate"] as const) {
      expect(
        listingAfterProbe({ listed: false, hold, unhealthySinceMs: null }, { healthy: true, atMs: 10 }, 72).change
      ).toBeNull()
    }
    expect(listingAfterProbe(listed, { healthy: true, atMs: 10 }, 72)).toEqual({ unhealthySinceMs: null, change: null })
  })

  test("unhealthy probes start a run; a listed resource is delisted once the run lasts delistAfterHours", () => {
    const first = listingAfterProbe(listed, { healthy: false, atMs: 1000 }, 72)
    expect(first).toEqual({ unhealthySinceMs: 1000, change: null })
    const { unhealthySinceMs } = first
    expect(
      listingAfterProbe({ ...listed, unhealthySinceMs }, { healthy: false, atMs: 1000 + 72 * HOUR - 1 }, 72).change
    ).toBeNull()
    expect(
      listingAfterProbe({ ...listed, unhealthySinceMs }, { healthy: false, atMs: 1000 + 72 * HOUR }, 72)
    ).toMatchObject({
      unhealthySinceMs: 1000,
      change: { listed: false, hold: "unhealthy" }
    })
    // Unlisted resources keep counting but nothing moves.
    expect(
      listingAfterProbe(
        { listed: false, hold: "operator", unhealthySinceMs: 1000 },
        { healthy: false, atMs: 1000 + 500 * HOUR },
        72
      )
    ).toEqual({ unhealthySinceMs: 1000, change: null })
  })
})

describe("reading discovery items (pure)", () => {
  const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC, decimals: 7, networks: undefined }
  const requirement = (network: string, asset = TESTNET_USDC, extra: Record<string, unknown> = {}) => ({
    scheme: "exact",
    network,
    amount: "10000",
    asset,
    payTo: FIXTURE_PAY_TO,
    maxTimeoutSeconds: 60,
    ...extra
  })
  const item = (accepts: Array<unknown>, extra: Record<string, unknown> = {}) => ({
    resource: "https://api.example.com/data",
    type: "http",
    x402Version: 2,
    accepts,
    ...extra
  })

  test("lastUpdated as Unix seconds, milliseconds or an ISO string; anything else is null", () => {
    expect(lastUpdatedMs(1703123456)).toBe(1703123456000)
    expect(lastUpdatedMs(1703123456000)).toBe(1703123456000)
    expect(lastUpdatedMs("2023-12-21T01:50:56.000Z")).toBe(1703123456000)
    expect(lastUpdatedMs("yesterday")).toBeNull()
    expect(lastUpdatedMs(undefined)).toBeNull()
  })

  test("keeps only options on this network and asset; other networks and assets are skipped", () => {
    expect(readItem(item([requirement("eip155:8453", "0xabc")]), "s", deployment)._tag).toBe("OtherNetwork")
    expect(readItem(item([requirement("stellar:pubnet")]), "s", deployment)._tag).toBe("OtherNetwork")
    expect(readItem(item([requirement("stellar:testnet", OTHER_ASSET)]), "s", deployment)._tag).toBe("OtherNetwork")
    const mixed = readItem(item([requirement("eip155:8453", "0xabc"), requirement("stellar:testnet")]), "s", deployment)
    expect(mixed._tag === "Kept" && mixed.entry.paymentOptions).toEqual([
      {
        network: "stellar:testnet",
        scheme: "exact",
        asset: TESTNET_USDC,
        amount: "10000",
        amountUsd: 0.001,
        payTo: FIXTURE_PAY_TO
      }
    ])
  })

  test("a source's networks narrow what is kept", () => {
    const narrowed = { ...deployment, networks: ["stellar:pubnet"] }
    expect(readItem(item([requirement("stellar:testnet")]), "s", narrowed)._tag).toBe("OtherNetwork")
  })

  test("tolerates absent metadata, ISO lastUpdated and v1 requirements; takes the method from the item", () => {
    const v1 = {
      scheme: "exact",
      network: "stellar:testnet",
      maxAmountRequired: "20000",
      asset: TESTNET_USDC,
      payTo: FIXTURE_PAY_TO,
      description: "v1 description",
      outputSchema: { input: { type: "http", method: "post" } }
    }
    const read = readItem(item([v1], { lastUpdated: "2026-01-01T00:00:00Z", metadata: null }), "s", deployment)
    expect(read).toMatchObject({
      _tag: "Kept",
      lastUpdatedMs: Date.parse("2026-01-01T00:00:00Z"),
      entry: {
        resource: {
          url: "https://api.example.com/data",
          method: "POST",
          description: "v1 description",
          name: "api.example.com/data"
        },
        provider: { id: "host:api.example.com", name: "api.example.com", url: "https://api.example.com" },
        paymentOptions: [{ amount: "20000", amountUsd: 0.002 }]
      }
    })
  })

  test("the id is derived from the URL, so two pulls and two sources name one resource the same", () => {
    const a = readItem(item([requirement("stellar:testnet")]), "one", deployment)
    const b = readItem(item([requirement("stellar:testnet")], { metadata: { name: "x" } }), "two", deployment)
    expect(a._tag === "Kept" && b._tag === "Kept" && a.entry.resource.id === b.entry.resource.id).toBe(true)
  })

  test("items that are not items, or whose resource is no http(s) URL, are invalid", () => {
    expect(readItem({ nope: 1 }, "s", deployment)._tag).toBe("Invalid")
    expect(readItem({ ...item([requirement("stellar:testnet")]), resource: "mcp://tool" }, "s", deployment)._tag).toBe(
      "Invalid"
    )
    expect(readItem({ ...item([requirement("stellar:testnet")]), type: "carrier-pigeon" }, "s", deployment)._tag).toBe(
      "Invalid"
    )
  })
})

describe("an origin's discovery documents (pure)", () => {
  const origin = "http://127.0.0.1:8080"
  const paid = { "x-payment-info": {}, responses: { "402": {} } }

  test("OpenAPI: operations with x-payment-info and a 402 response, under the document's own base path", () => {
    const routes = routesFromOpenApi(
      {
        servers: [{ url: "/api" }],
        paths: {
          "/a": { get: paid, post: { responses: { "402": {} } } },
          "/b": { post: { ...paid, summary: "B" } },
          "/c": { get: { "x-payment-info": {}, responses: { "200": {} } } },
          "/d/{id}": { get: paid }
        }
      },
      origin
    )
    expect(routes).toEqual([
      { url: `${origin}/api/a`, method: "GET", foundIn: "openapi", description: null, skip: null },
      { url: `${origin}/api/b`, method: "POST", foundIn: "openapi", description: "B", skip: null },
      expect.objectContaining({ url: `${origin}/api/d/%7Bid%7D`, skip: expect.stringContaining("templated") })
    ])
    expect(routesFromOpenApi({ openapi: "3.1.0" }, origin)).toBeNull()
    expect(routesFromOpenApi("nope", origin)).toBeNull()
  })

  test("/.well-known/x402: version 1 resources on the origin; other origins are skipped, never contacted", () => {
    const routes = routesFromWellKnown(
      { version: 1, resources: ["/x", `${origin}/y`, "https://elsewhere.example/z", 7] },
      origin
    )
    expect(routes?.map((r) => [r.url, r.skip === null])).toEqual([
      [`${origin}/x`, true],
      [`${origin}/y`, true],
      ["https://elsewhere.example/z", false]
    ])
    expect(routesFromWellKnown({ version: 2, resources: [] }, origin)).toBeNull()
  })

  test("OpenAPI routes come first; a URL both documents name is probed once", () => {
    const openapi = routesFromOpenApi({ paths: { "/x": { post: paid } } }, origin)!
    const wellKnown = routesFromWellKnown({ version: 1, resources: ["/x", "/y"] }, origin)!
    expect(mergeRoutes(openapi, wellKnown).map((r) => [r.url, r.method, r.foundIn])).toEqual([
      [`${origin}/x`, "POST", "openapi"],
      [`${origin}/y`, "GET", "well-known"]
    ])
  })
})

describe("registrationOutcome (pure)", () => {
  const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }
  const option = (network: string, asset: string, scheme = "exact") => ({
    x402Version: 2,
    scheme,
    network,
    asset,
    payTo: FIXTURE_PAY_TO,
    amount: "1",
    maxAmount: null
  })
  test("names what a route got wrong", () => {
    expect(registrationOutcome("healthy", [], deployment)).toBe("listed")
    expect(registrationOutcome("http_status", [], deployment)).toBe("not-402")
    expect(registrationOutcome("no_challenge", [], deployment)).toBe("invalid-challenge")
    expect(registrationOutcome("no_acceptable_option", [option("stellar:pubnet", TESTNET_USDC)], deployment)).toBe(
      "wrong-network"
    )
    expect(registrationOutcome("no_acceptable_option", [option("stellar:testnet", OTHER_ASSET)], deployment)).toBe(
      "wrong-asset"
    )
    expect(
      registrationOutcome("no_acceptable_option", [option("stellar:testnet", TESTNET_USDC, "stream")], deployment)
    ).toBe("invalid-challenge")
    expect(registrationOutcome("timeout", [], deployment)).toBe("unreachable")
    expect(registrationOutcome("refused_target", [], deployment)).toBe("refused")
  })
})
