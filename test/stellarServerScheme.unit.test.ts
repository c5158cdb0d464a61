import { describe, expect, test } from "bun:test"
import { type FacilitatorClient, x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server"
import type { Network, Price } from "@x402/core/types"
import { declareDiscoveryExtension } from "@x402/extensions/bazaar"
import { ExactStellarScheme } from "@x402/stellar/exact/server"
import { TESTNET_USDC } from "../src/config.js"
import { classify, readChallenge } from "../src/x402/challenge.js"
import { PUBNET_USDC, stellarServerScheme } from "../src/x402/stellarServerScheme.js"
import { adapter, FIXTURE_PAY_TO } from "./fixtures/x402Terms.js"

const supportedOnly: FacilitatorClient = {
  getSupported: async () => ({
    kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true } }],
    extensions: [],
    signers: {}
  }),
  verify: async () => ({ isValid: false, invalidReason: "not_in_this_test" }),
  settle: async () => ({ success: false, errorReason: "not_in_this_test", transaction: "", network: "stellar:testnet" })
}

describe("the project's Stellar exact server scheme", () => {
  const prices: ReadonlyArray<Price> = ["$0.001", "0.5", 1.25, "$12.3456789", { amount: "42", asset: TESTNET_USDC }]
  const networks: ReadonlyArray<Network> = ["stellar:testnet", "stellar:pubnet"]

  test("prices as @x402/stellar 2.9 does, on both networks", async () => {
    const ours = stellarServerScheme("exact")
    const theirs = new ExactStellarScheme()
    for (const network of networks) {
      for (const price of prices) {
        expect(await ours.parsePrice(price, network)).toEqual(await theirs.parsePrice(price, network))
      }
    }
    expect((await ours.parsePrice("$1", "stellar:pubnet")).asset).toBe(PUBNET_USDC)
  })

  test("copies the facilitator's fee sponsorship into extra as @x402/stellar 2.9 does", async () => {
    const base = {
      scheme: "exact",
      network: "stellar:testnet" as Network,
      asset: TESTNET_USDC,
      amount: "1",
      payTo: FIXTURE_PAY_TO,
      maxTimeoutSeconds: 60,
      extra: { a: 1 }
    }
    for (const extra of [{ areFeesSponsored: true }, { areFeesSponsored: false }, {}, undefined]) {
      const kind = {
        x402Version: 2,
        scheme: "exact",
        network: "stellar:testnet" as Network,
        ...(extra ? { extra } : {})
      }
      const ours = await stellarServerScheme("exact").enhancePaymentRequirements(base, kind, [])
      expect(ours).toEqual(await new ExactStellarScheme().enhancePaymentRequirements(base, kind, []))
    }
  })

  test("refuses what it cannot price rather than guessing an asset", async () => {
    const scheme = stellarServerScheme("exact")
    await expect(scheme.parsePrice("1 EURC", "stellar:testnet")).rejects.toThrow("not EURC")
    await expect(scheme.parsePrice("$1", "stellar:futurenet" as Network)).rejects.toThrow("no USDC contract")
    await expect(scheme.parsePrice("lots", "stellar:testnet")).rejects.toThrow("Invalid money format")
    expect(scheme.getAssetDecimals?.(TESTNET_USDC, "stellar:testnet")).toBe(7)
    expect(scheme.getAssetDecimals?.(TESTNET_USDC, "stellar:pubnet")).toBeUndefined()
  })

  test("@x402/stellar 2.9's scheme cannot serve a 2.27 resource server, which is why the project owns one", () => {
    // The 2.9 object lacks the members 2.27 reads; the cast only lets the test show the failure.
    const stale = new ExactStellarScheme() as unknown as Parameters<x402ResourceServer["register"]>[1]
    const routes = {
      "GET /x": {
        accepts: { scheme: "exact", network: "stellar:testnet" as Network, payTo: FIXTURE_PAY_TO, price: "$0.001" }
      }
    }
    expect(
      () => new x402HTTPResourceServer(new x402ResourceServer(supportedOnly).register("stellar:testnet", stale), routes)
    ).toThrow("paymentFlows")
    const ours = new x402ResourceServer(supportedOnly).register("stellar:testnet", stellarServerScheme("exact"))
    expect(() => new x402HTTPResourceServer(ours, routes)).not.toThrow()
  })
})

describe("a challenge from a stock 2.27 seller", () => {
  test("with service metadata, a payment flow and extensions decodes and is judged healthy", async () => {
    const upfront = {
      ...stellarServerScheme("exact"),
      paymentFlows: { default: { supported: ["authorization", "upfront"], default: "authorization" } }
    } as const
    const http = new x402HTTPResourceServer(
      new x402ResourceServer(supportedOnly).register("stellar:testnet", upfront),
      {
        "GET /weather": {
          accepts: {
            scheme: "exact",
            network: "stellar:testnet",
            payTo: FIXTURE_PAY_TO,
            price: "$0.001",
            extra: { paymentFlow: "upfront" }
          },
          description: "Weather by city",
          serviceName: "Fixture Weather",
          tags: ["weather", "forecast"],
          iconUrl: "https://example.test/icon.png",
          extensions: declareDiscoveryExtension({ input: { city: "Lisbon" }, output: { example: { tempC: 21 } } })
        }
      }
    )
    await http.initialize()
    const request = new Request("http://127.0.0.1/weather")
    const result = await http.processHTTPRequest({
      adapter: adapter(request, new URL(request.url)),
      path: "/weather",
      method: "GET"
    })
    if (result.type !== "payment-error") throw new Error(`expected a 402, got ${result.type}`)
    const headers = result.response.headers
    const reading = readChallenge((name) => headers[name] ?? headers[name.toLowerCase()], result.response.body)
    if (reading._tag !== "Decoded" || reading.challenge.x402Version !== 2)
      throw new Error(`expected a v2 challenge, got ${JSON.stringify(reading)}`)
    expect(reading.challenge.resource).toMatchObject({
      serviceName: "Fixture Weather",
      tags: ["weather", "forecast"],
      iconUrl: "https://example.test/icon.png"
    })
    expect(reading.challenge.accepts[0]?.extra).toMatchObject({ paymentFlow: "upfront", areFeesSponsored: true })
    expect(Object.keys(reading.challenge.extensions ?? {})).toContain("bazaar")
    expect(reading.options).toEqual([
      {
        x402Version: 2,
        scheme: "exact",
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: FIXTURE_PAY_TO,
        amount: "10000",
        maxAmount: null
      }
    ])
    expect(classify(402, reading, { network: "stellar:testnet", assetContract: TESTNET_USDC })).toBe("healthy")
  })
})
