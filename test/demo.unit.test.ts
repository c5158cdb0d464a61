import { describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Either } from "effect"
import { bundledCatalog, DEMO_BEHAVIOURS, demoProviderId, loadConfig } from "../src/config.js"
import { answerFor, failsAt, priceFactorAt, scaleAmount, scaleOffers, sellerFrom } from "../src/demo/behaviour.js"
import { worstCaseUsd } from "../src/domain/resources.js"
import { contradiction } from "../src/verification/catalogMatch.js"
import { ENDPOINTS } from "../src/vertical/VerticalApp.js"

const dir = mkdtempSync(join(tmpdir(), "sextant-demo-"))
const load = (content: unknown) => {
  const path = join(dir, `${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, JSON.stringify(content))
  return Either.getOrThrow(loadConfig(path, {}))
}
const defaults = Either.getOrThrow(loadConfig(undefined, {}))
const demo = defaults.demo

describe("demo behaviours (pure)", () => {
  test("the flaky share is spread evenly and the first request is answered", () => {
    const pattern = (share: number, n = 10) => Array.from({ length: n }, (_, i) => failsAt(i, share))
    expect(pattern(0.5)).toEqual([false, true, false, true, false, true, false, true, false, true])
    expect(pattern(0.25, 8)).toEqual([false, false, false, true, false, false, false, true])
    expect(pattern(0).some(Boolean)).toBe(false)
    expect(pattern(1).every(Boolean)).toBe(true)
    // Never two failures in a row below a share of 1/2, so a flaky resource is never OFFLINE-like.
    for (const share of [0.1, 0.3, 0.5]) {
      const p = pattern(share, 200)
      expect(p.some((f, i) => f && p[i + 1])).toBe(false)
      expect(p.filter(Boolean).length).toBe(Math.floor(200 * share))
    }
  })

  test("each behaviour answers as documented: at once, after slowDelayMs, or a failing share", () => {
    expect(answerFor("fast", 1, demo)).toEqual({ _tag: "Answer", delayMs: 0 })
    expect(answerFor("raiser", 1, demo)).toEqual({ _tag: "Answer", delayMs: 0 })
    expect(answerFor("slow", 1, demo)).toEqual({ _tag: "Answer", delayMs: demo.slowDelayMs })
    expect([0, 1, 2, 3].map((n) => answerFor("flaky", n, demo)._tag)).toEqual(["Answer", "Fail", "Answer", "Fail"])
  })

  test("only the raiser changes its price, and only from priceRaiseAfterSeconds on", () => {
    const after = demo.priceRaiseAfterSeconds * 1000
    expect(priceFactorAt("raiser", after - 1, demo)).toBe(1)
    expect(priceFactorAt("raiser", after, demo)).toBe(demo.priceRaiseFactor)
    for (const behaviour of ["fast", "slow", "flaky"] as const)
      expect(priceFactorAt(behaviour, after * 10, demo)).toBe(1)
  })

  test("scaled amounts are exact base units, rounded up so a raise is never rounded away", () => {
    expect(scaleAmount("5000", 2)).toBe("10000")
    expect(scaleAmount("3", 1.5)).toBe("5")
    expect(scaleAmount("1", 1.000001)).toBe("2")
    expect(scaleAmount("123456789012345678", 2)).toBe("246913578024691356")
  })
})

describe("the bundled catalog as the demo providers' price list", () => {
  const catalog = defaults.catalog

  test("the vertical sells its four tools over MCP too, and demo-fast its inspect, at the HTTP prices", () => {
    const mcp = catalog.filter((e) => e.resource.type === "mcp")
    expect(mcp.map((e) => e.resource.id).sort()).toEqual<unknown>(
      ["demo-fast.mcp.inspect", ...ENDPOINTS.map((e) => `stellar-intel.mcp.${e}`)].sort()
    )
    for (const entry of mcp) {
      const http = catalog.find((e) => e.resource.id === entry.resource.id.replace(".mcp.", ".rwa."))!
      expect(entry.paymentOptions).toEqual(http.paymentOptions)
      expect(entry.resource.capabilities).toEqual(http.resource.capabilities)
      expect(entry.resource.url).toBe(`${new URL(http.resource.url).origin}/${entry.provider.id}/mcp`)
      expect(entry.resource.mcp?.toolName).toBe(entry.resource.id.split(".").at(-1)!)
    }
  })

  test("every demo provider sells the vertical's four capabilities with an exact and an upto option, to one payee", () => {
    for (const behaviour of DEMO_BEHAVIOURS) {
      const id = demoProviderId(behaviour)
      const entries = catalog.filter((e) => e.provider.id === id && e.resource.type === "http")
      expect(entries.map((e) => e.resource.id).sort()).toEqual<unknown>(ENDPOINTS.map((e) => `${id}.rwa.${e}`).sort())
      expect(entries.every((e) => e.provider.name.startsWith("Demo "))).toBe(true)
      const seller = sellerFrom(catalog, id)!
      expect(new Set(entries.flatMap((e) => e.paymentOptions.map((o) => o.payTo)))).toEqual(new Set([seller.payTo]))
      for (const endpoint of ENDPOINTS) {
        const entry = entries.find((e) => e.resource.id.endsWith(`.${endpoint}`))!
        expect(seller.offers[endpoint]).toEqual([
          { scheme: "exact", amount: entry.paymentOptions[0]!.amount },
          { scheme: "upto", amount: entry.paymentOptions[1]!.maxAmount! }
        ])
      }
    }
  })

  test("for every capability the flaky provider is the cheapest and the steady one the dearest, so cheapest and reliable disagree", () => {
    for (const endpoint of ENDPOINTS) {
      const worst = (providerId: string) =>
        Math.min(
          ...catalog.find((e) => e.resource.id === `${providerId}.rwa.${endpoint}`)!.paymentOptions.map(worstCaseUsd)
        )
      const order = ["demo-flaky", "demo-raiser", "demo-slow", "stellar-intel", "demo-fast"].map(worst)
      expect(order).toEqual([...order].sort((a, b) => a - b))
      expect(new Set(order).size).toBe(order.length)
    }
  })

  test("the raiser's challenge contradicts its catalog entry once raised, and not before", () => {
    const seller = sellerFrom(catalog, "demo-raiser")!
    const challengeOf = (factor: number, endpoint: (typeof ENDPOINTS)[number]) =>
      scaleOffers(seller.offers, factor)[endpoint].map((o) => ({
        x402Version: 2,
        scheme: o.scheme,
        network: "stellar:testnet",
        asset: defaults.asset.assetContract,
        payTo: seller.payTo,
        amount: o.amount,
        maxAmount: o.scheme === "upto" ? o.amount : null
      }))
    for (const endpoint of ENDPOINTS) {
      const entry = catalog.find((e) => e.resource.id === `demo-raiser.rwa.${endpoint}`)!
      expect(contradiction(challengeOf(1, endpoint), entry.paymentOptions, defaults.probes.priceTolerance)).toBeNull()
      expect(
        contradiction(
          challengeOf(demo.priceRaiseFactor, endpoint),
          entry.paymentOptions,
          defaults.probes.priceTolerance
        )
      ).toStartWith("price above the advertised")
    }
  })
})

describe("config demo.*", () => {
  test("on by default with no catalog: the providers are listed at 4022-4025 and their origins probed", () => {
    expect(demo).toMatchObject({
      enabled: true,
      host: "127.0.0.1",
      ports: { fast: 4022, slow: 4023, flaky: 4024, raiser: 4025 }
    })
    expect(defaults.catalog.find((e) => e.resource.id === "demo-slow.rwa.changes")?.resource.url).toBe(
      "http://127.0.0.1:4023/demo-slow/v1/rwa/changes"
    )
    for (const port of [4022, 4023, 4024, 4025])
      expect(defaults.probes.trustedOrigins).toContain(`http://127.0.0.1:${port}`)
  })

  test("moved ports move the catalog's URLs and the trusted origins with them", () => {
    const config = load({ demo: { ports: { flaky: 6124 } } })
    const flaky = config.catalog.find((e) => e.resource.id === "demo-flaky.rwa.inspect")!
    expect(flaky.resource.url).toBe("http://127.0.0.1:6124/demo-flaky/v1/rwa/inspect")
    expect(flaky.provider.url).toBe("http://127.0.0.1:6124")
    expect(config.probes.trustedOrigins).toContain("http://127.0.0.1:6124")
    expect(config.catalog.find((e) => e.resource.id === "demo-fast.rwa.inspect")!.resource.url).toStartWith(
      "http://127.0.0.1:4022/"
    )
  })

  test("turned off, nothing lists them: the bundled catalog is the vertical's alone", () => {
    const config = load({ demo: { enabled: false } })
    expect(config.demo.enabled).toBe(false)
    expect(new Set(config.catalog.map((e) => e.provider.id))).toEqual(new Set(["stellar-intel"]))
    expect(config.probes.trustedOrigins).not.toContain("http://127.0.0.1:4025")
  })

  test("off by default when a catalog is configured, on when asked for; they still sell the bundled price list", () => {
    const own = { catalog: [] }
    expect(load(own).demo.enabled).toBe(false)
    const asked = load({ ...own, demo: { enabled: true } })
    expect(asked.demo.enabled).toBe(true)
    expect(asked.catalog).toEqual([])
    const priceList = Either.getOrThrow(bundledCatalog(asked))
    expect(sellerFrom(priceList, "demo-raiser")?.offers.inspect).toEqual([
      { scheme: "exact", amount: "5000" },
      { scheme: "upto", amount: "7500" }
    ])
  })
})
