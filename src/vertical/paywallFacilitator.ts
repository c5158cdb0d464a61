import { type FacilitatorClient, HTTPFacilitatorClient, x402ResourceServer } from "@x402/core/server"
import type { SupportedResponse } from "@x402/core/types"
import { createOfferReceiptExtension, type OfferReceiptIssuer } from "@x402/extensions/offer-receipt"
import type { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { stellarServerScheme } from "../x402/stellarServerScheme.js"
import type { PaywallConfig } from "./Paywall.js"

export const X402_VERSION = 2

/** The facilitator URL without any credentials it may carry, for messages and logs. */
export const displayUrl = (url: string): string => {
  try {
    const u = new URL(url)
    return `${u.origin}${u.pathname}`
  } catch {
    return "the configured facilitator"
  }
}

export const errorMessage = (e: unknown): string => {
  const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : ""
  return e instanceof Error ? `${e.message}${cause}` : String(e)
}

/** The facilitator's HTTP client, with the configured API key as a bearer token on every call. */
export const facilitatorClientOf = (config: PaywallConfig) => {
  const apiKey = config.facilitatorApiKey
  return new HTTPFacilitatorClient({
    url: config.facilitatorUrl,
    ...(apiKey === null
      ? {}
      : {
          createAuthHeaders: () => {
            const headers = { Authorization: `Bearer ${apiKey}` }
            return Promise.resolve({ verify: headers, settle: headers, supported: headers })
          }
        })
  })
}

/**
 * A facilitator client that knows only what the config says the vertical asks for. It lets the
 * x402 library build challenges (amount, asset, payTo, encoding) before the real facilitator has
 * answered `/supported`; it never verifies or settles, since a paid request waits for readiness.
 */
export const configOnlyFacilitator = (network: StellarNetwork): FacilitatorClient => {
  const refuse = () => Promise.reject(new Error("the facilitator is not ready"))
  return {
    getSupported: () =>
      Promise.resolve({
        kinds: SCHEMES.map((scheme) => ({ x402Version: X402_VERSION, scheme, network })),
        extensions: [],
        signers: {}
      }),
    verify: refuse,
    settle: refuse
  }
}

const SCHEMES: ReadonlyArray<PaymentScheme> = ["exact", "upto"]

/**
 * The facilitator's client for the live server, whose `/supported` is fetched by `fetchSupported`
 * only. `x402ResourceServer.initialize` prints a facilitator it cannot reach to the console,
 * outside the logger; here it only reads the answer `fetchSupported` got, so a facilitator that
 * is down (Sextant's own, before it listens) is retried quietly.
 */
export const prefetchedSupported = (client: FacilitatorClient) => {
  // Written only after a successful fetch, and read only by the initialize that follows it.
  let answer: SupportedResponse | undefined
  const fetchSupported = () =>
    client.getSupported().then((supported) => {
      answer = supported
    })
  const forServer: FacilitatorClient = {
    getSupported: () =>
      answer === undefined ? Promise.reject(new Error("GET /supported has not answered")) : Promise.resolve(answer),
    verify: (payload, requirements) => client.verify(payload, requirements),
    settle: (payload, requirements) => client.settle(payload, requirements)
  }
  return { fetchSupported, client: forServer }
}

/**
 * The `offer-receipt` extension signs each challenge's offers and each settled payment's receipt
 * with the provider's key (upstream's own extension; `extensions/offerReceipt.ts`).
 */
export const makeServer = (client: FacilitatorClient, network: StellarNetwork, issuer: OfferReceiptIssuer) =>
  new x402ResourceServer(client)
    .register(network, stellarServerScheme("exact"))
    .register(network, stellarServerScheme("upto"))
    .registerExtension(createOfferReceiptExtension(issuer))
