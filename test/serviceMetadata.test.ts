import { describe, expect, test } from "bun:test"
import { readItem } from "../src/catalog/bazaarItems.js"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { serviceMetadataOf } from "../src/domain/serviceMetadata.js"
import { readBazaar } from "../src/extensions/bazaar.js"
import { discoveredEntry } from "../src/verification/discoveredEntry.js"
import { readChallenge } from "../src/x402/challenge.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { testConfig } from "./support/server.js"

/** Raw metadata as a careless seller sends it: one good value and one bad of each kind. */
const raw = {
  serviceName: "Sky Data",
  tags: ["forecast", "", "Forecast", 7, "climate", "x".repeat(500)],
  iconUrl: "https://icons.example/sky.png"
}
const kept = { serviceName: "Sky Data", tags: ["forecast", "climate"], iconUrl: "https://icons.example/sky.png" }

describe("service metadata, sanitised by upstream's sanitizeResourceServiceMetadata", () => {
  test("invalid fields are dropped, not refused", () => {
    expect(serviceMetadataOf({ url: "https://a.example/x", ...raw })).toEqual(kept)
    expect(
      serviceMetadataOf({
        url: "https://a.example/x",
        serviceName: "bad\u0007name",
        tags: "forecast",
        iconUrl: "javascript:alert(1)"
      })
    ).toEqual({})
    expect(serviceMetadataOf({ url: "https://a.example/x", iconUrl: "http://169.254.169.254/icon.png" })).toEqual({})
  })

  test("from a payment's bazaar extension: the resource's metadata, the name from serviceName", () => {
    const reading = readBazaar(
      {
        paymentPayload: {
          resource: { url: "https://api.example/weather", ...raw },
          extensions: { bazaar: { info: { input: { type: "http", method: "GET" } }, schema: { type: "object" } } }
        },
        paymentRequirements: {
          scheme: "exact",
          network: "stellar:testnet",
          asset: TESTNET_USDC,
          amount: "10000",
          payTo: FIXTURE_PAY_TO
        }
      },
      testConfig().asset
    )
    if (reading._tag !== "Accepted") throw new Error(JSON.stringify(reading))
    expect(reading.entry.resource).toMatchObject({ name: "Sky Data", ...kept })
  })

  test("from a catalog import's 2.27 bazaar item", () => {
    const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC, decimals: 7, networks: undefined }
    const item = {
      resource: "https://api.example/weather",
      type: "http",
      x402Version: 2,
      accepts: [
        {
          scheme: "exact",
          network: "stellar:testnet",
          amount: "10000",
          asset: TESTNET_USDC,
          payTo: FIXTURE_PAY_TO,
          maxTimeoutSeconds: 60
        }
      ],
      ...raw
    }
    const reading = readItem(item, "s", deployment)
    if (reading._tag !== "Kept") throw new Error(JSON.stringify(reading))
    expect(reading.entry.resource).toMatchObject(kept)
  })

  test("from an origin's own 402 when it is registered", () => {
    const header = Buffer.from(
      JSON.stringify({
        x402Version: 2,
        resource: {
          url: "https://api.example/weather",
          description: "Weather",
          ...raw,
          tags: ["forecast", "climate", "Forecast"]
        },
        accepts: [
          {
            scheme: "exact",
            network: "stellar:testnet",
            amount: "10000",
            asset: TESTNET_USDC,
            payTo: FIXTURE_PAY_TO,
            maxTimeoutSeconds: 60,
            extra: {}
          }
        ]
      })
    ).toString("base64")
    const reading = readChallenge((name) => (name === "PAYMENT-REQUIRED" ? header : null), {})
    if (reading._tag !== "Decoded") throw new Error(JSON.stringify(reading))
    const observed = { observation: {} as never, challenge: reading.challenge, options: reading.options }
    const entry = discoveredEntry(
      ResourceId.make("d1"),
      new URL("https://api.example/weather"),
      "GET",
      observed,
      testConfig()
    )
    expect(entry.resource).toMatchObject({ description: "Weather", ...kept })
  })
})
