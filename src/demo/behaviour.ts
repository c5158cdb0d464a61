import type { DemoBehaviour, DemoConfig } from "../config.js"
import type { CatalogEntry } from "../domain/resources.js"
import type { Endpoint, Offer, Offers } from "../vertical/Paywall.js"
import { ENDPOINTS } from "../vertical/VerticalApp.js"

/**
 * What a demo provider does, as plain functions: how it answers its nth request, what it asks
 * at a given age, and what it sells, read from the catalog that advertises it.
 */

export type Answer = { readonly _tag: "Answer"; readonly delayMs: number } | { readonly _tag: "Fail" }

const at = (delayMs: number): Answer => ({ _tag: "Answer", delayMs })

/**
 * Whether request `n` (from 0) is one of the failing share: it fails when it crosses the next
 * multiple of 1/share, so failures are spread evenly, never bunched by chance, and the first
 * request is answered. With 0.5 every second request fails.
 */
export const failsAt = (n: number, share: number): boolean => Math.floor((n + 1) * share) > Math.floor(n * share)

/**
 * How a provider answers request `n` to one of its endpoints. The flaky one answers its failing
 * share with a 500: a failure that is an answer (LIVE, then DEGRADED), where a hang would count
 * as a connect failure and turn it OFFLINE after three in a row.
 */
export const answerFor = (
  behaviour: DemoBehaviour,
  n: number,
  demo: Pick<DemoConfig, "slowDelayMs" | "flakyFailureShare">
): Answer => {
  switch (behaviour) {
    case "slow":
      return at(demo.slowDelayMs)
    case "flaky":
      return failsAt(n, demo.flakyFailureShare) ? { _tag: "Fail" } : at(0)
    case "fast":
    case "raiser":
      return at(0)
  }
}

/** The multiple of its advertised prices a provider asks `elapsedMs` after it started. */
export const priceFactorAt = (
  behaviour: DemoBehaviour,
  elapsedMs: number,
  demo: Pick<DemoConfig, "priceRaiseAfterSeconds" | "priceRaiseFactor">
): number => (behaviour === "raiser" && elapsedMs >= demo.priceRaiseAfterSeconds * 1000 ? demo.priceRaiseFactor : 1)

const MILLIONTHS = 1_000_000n

/** `amount` base units times `factor`, rounded up to a whole base unit, so a raise is never rounded away. */
export const scaleAmount = (amount: string, factor: number): string => {
  const scaled = BigInt(amount) * BigInt(Math.round(factor * 1_000_000))
  return ((scaled + MILLIONTHS - 1n) / MILLIONTHS).toString()
}

export const scaleOffers = (offers: Offers, factor: number): Offers => {
  if (factor === 1) return offers
  const scale = (endpoint: Endpoint) => offers[endpoint].map((o) => ({ ...o, amount: scaleAmount(o.amount, factor) }))
  return {
    inspect: scale("inspect"),
    changes: scale("changes"),
    compliance: scale("compliance"),
    eligibility: scale("eligibility")
  }
}

export interface Seller {
  readonly payTo: string
  /** What each endpoint asks, one offer per advertised option. */
  readonly offers: Offers
}

const isEndpoint = (segment: string | undefined): segment is Endpoint => ENDPOINTS.some((e) => e === segment)

/**
 * What a provider sells, as its catalog entries advertise it: per endpoint (the last segment of
 * the entry's URL) one offer per payment option, the `upto` ceiling being what its challenge asks.
 * The catalog is the provider's price list, so a probe finds exactly what is advertised until a
 * behaviour changes it. Undefined when the catalog lists no priced entry of the provider.
 */
export const sellerFrom = (entries: ReadonlyArray<CatalogEntry>, providerId: string): Seller | undefined => {
  const own = entries.filter((e) => e.provider.id === providerId && e.paymentOptions.length > 0)
  const payTo = own[0]?.paymentOptions[0]?.payTo
  if (payTo === undefined) return undefined
  const offers: Record<Endpoint, Array<Offer>> = { inspect: [], changes: [], compliance: [], eligibility: [] }
  for (const entry of own) {
    const endpoint = new URL(entry.resource.url).pathname.split("/").at(-1)
    if (!isEndpoint(endpoint)) continue
    for (const option of entry.paymentOptions) {
      offers[endpoint].push({
        scheme: option.scheme,
        amount: option.scheme === "upto" ? (option.maxAmount ?? option.amount) : option.amount
      })
    }
  }
  return { payTo, offers }
}
