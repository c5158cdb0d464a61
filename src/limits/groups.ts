import * as FindMyWay from "find-my-way-ts"
import type { LimitsConfig } from "../config.js"
import type { PrincipalId } from "../domain/ids.js"

/** The endpoint groups with a rate limit: each costs this service (or a third party) real work. */
export type LimitedGroup = "validate" | "register" | "receipts" | "verify" | "settle" | "search"

/**
 * The limited routes, matched by the same router, with the same options, as the one HttpApi
 * dispatches with (@effect/platform's HttpRouter builds a find-my-way-ts router with its
 * defaults): `/V1/VALIDATE`, `//v1/validate`, `/v1/%76alidate` and a trailing slash reach the
 * validate handler, so they must count against the validate limit too.
 */
const limited = (() => {
  const router = FindMyWay.make<LimitedGroup>()
  router.on("POST", "/v1/validate", "validate")
  router.on("POST", "/v1/resources/register", "register")
  router.on("POST", "/v1/receipts", "receipts")
  // An outcome report is buyer evidence read against the ledger, as a receipt is: one budget for both.
  router.on("POST", "/v1/preflight/outcomes", "receipts")
  router.on("POST", "/x402/verify", "verify")
  router.on("POST", "/x402/settle", "settle")
  router.on("POST", "/v1/search", "search")
  router.on("GET", "/x402/discovery/search", "search")
  return router
})()

/** The limited group a request (its method and the URL as it came, query included) falls in, if any. */
export const limitedGroupOf = (method: string, url: string): LimitedGroup | undefined =>
  limited.find(method.toUpperCase(), url)?.handler

/**
 * Who a limit counts against: the API key's principal when the request carries a configured key,
 * else the client's address. An unknown key counts against the address, so guessing keys is
 * limited like anything else.
 */
export const limitKey = (group: LimitedGroup, principal: PrincipalId | null, address: string) =>
  principal === null ? `${group}:addr:${address}` : `${group}:key:${principal}`

/**
 * The client's address: the connection's peer, or, when the operator named the header a reverse
 * proxy writes it into, the entry `trustedProxyHops` from the right of that header. Each proxy
 * appends the address it saw on the right, so everything left of what the operator's own proxies
 * wrote is whatever the client chose to send. A header shorter than the hop count gives its
 * left-most entry (the furthest any proxy saw).
 */
export const clientAddress = (
  limits: Pick<LimitsConfig, "clientAddressHeader" | "trustedProxyHops">,
  headers: Readonly<Record<string, string | undefined>>,
  peer: string | undefined
): string => {
  const forwarded = limits.clientAddressHeader === null ? undefined : headers[limits.clientAddressHeader]
  const entries = (forwarded ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "")
  const chosen = entries[Math.max(0, entries.length - limits.trustedProxyHops)]
  return chosen ?? peer ?? "unknown"
}
