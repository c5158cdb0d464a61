import { describe, expect, test } from "bun:test"
import {
  advertisesPayment,
  CLIENT_CAPABILITIES_META,
  canElicit,
  extensionBinding,
  type PaidKind,
  paymentOf,
  requestCapabilities
} from "../src/vertical/mcpPayment.js"
import { readResourceUri, resourceTemplate } from "../src/vertical/mcpReads.js"
import { ENDPOINTS } from "../src/vertical/VerticalApp.js"
import { X402_MCP_EXTENSION } from "../src/x402/mcpAnswer.js"

const envelope = (capabilities: unknown) => ({ [CLIENT_CAPABILITIES_META]: capabilities })

describe("which x402 MCP binding a request gets (pure)", () => {
  test("a request's own _meta capabilities select the extension: every method in 2026-07-28, resources and prompts in 2025", () => {
    const declared = requestCapabilities(envelope({ extensions: { [X402_MCP_EXTENSION]: {} } }))
    expect(advertisesPayment(declared)).toBe(true)
    expect(
      ["tool", "resource", "prompt"].map((kind) => extensionBinding("modern", kind as PaidKind, declared))
    ).toEqual([true, true, true])
    // The x402 transport has only the tool-result binding before 2026-07-28: a 2025-era tool keeps it.
    expect(
      ["tool", "resource", "prompt"].map((kind) => extensionBinding("legacy", kind as PaidKind, declared))
    ).toEqual([false, true, true])
    for (const era of ["modern", "legacy"] as const) {
      expect(extensionBinding(era, "resource", requestCapabilities(envelope({ extensions: {} })))).toBe(false)
      expect(
        extensionBinding(era, "resource", requestCapabilities(envelope({ extensions: ["org.x402/payment"] })))
      ).toBe(false)
      expect(extensionBinding(era, "prompt", requestCapabilities(undefined))).toBe(false)
    }
  })

  test("elicitation is read from the request's own capabilities", () => {
    expect(canElicit(requestCapabilities(envelope({ elicitation: { form: {} } })))).toBe(true)
    expect(canElicit(requestCapabilities(envelope({})))).toBe(false)
  })

  test("a payment is an object under x402/payment; anything else is no payment", () => {
    expect(paymentOf({ "x402/payment": { x402Version: 2 } })).toEqual({ x402Version: 2 })
    expect(paymentOf({ "x402/payment": "base64" })).toBeUndefined()
    expect(paymentOf({ "x402/payment": [1] })).toBeUndefined()
    expect(paymentOf(undefined)).toBeUndefined()
  })
})

describe("paid resource URIs (pure)", () => {
  test("each endpoint's template names its parameters", () => {
    expect(ENDPOINTS.map((e) => resourceTemplate("stellar-intel", e))).toEqual([
      "rwa://stellar-intel/inspect{?asset}",
      "rwa://stellar-intel/changes{?asset}",
      "rwa://stellar-intel/compliance{?asset}",
      "rwa://stellar-intel/eligibility{?asset,wallet}"
    ])
  })

  test("a URI names an endpoint and its input only under this vertical's name and scheme", () => {
    expect(
      readResourceUri("stellar-intel", ENDPOINTS, "rwa://stellar-intel/eligibility?asset=CLAW%3AGABC&wallet=GXYZ")
    ).toEqual({
      endpoint: "eligibility",
      input: { asset: "CLAW:GABC", wallet: "GXYZ" }
    })
    expect(readResourceUri("stellar-intel", ENDPOINTS, "rwa://demo-fast/inspect?asset=X")).toBeUndefined()
    expect(readResourceUri("stellar-intel", ENDPOINTS, "https://stellar-intel/inspect?asset=X")).toBeUndefined()
    expect(readResourceUri("stellar-intel", ENDPOINTS, "rwa://stellar-intel/status")).toBeUndefined()
    expect(readResourceUri("stellar-intel", ENDPOINTS, "not a uri")).toBeUndefined()
  })
})
