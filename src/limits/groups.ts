import type { LimitsConfig } from "../config.js"

/** The endpoint groups with a rate limit: each costs this service (or a third party) real work. */
export type LimitedGroup = "validate" | "register" | "receipts" | "verify" | "settle"

const GROUPS: Record<string, LimitedGroup> = {
  "POST /v1/validate": "validate",
  "POST /v1/resources/register": "register",
  "POST /v1/receipts": "receipts",
  "POST /x402/verify": "verify",
  "POST /x402/settle": "settle"
}

/** The limited group a request falls in, if any (a trailing slash is not another endpoint). */
export const limitedGroupOf = (method: string, path: string): LimitedGroup | undefined =>
  GROUPS[`${method.toUpperCase()} ${path.length > 1 ? path.replace(/\/+$/, "") : path}`]

/**
 * Who a limit counts against: the API key's principal when the request carries a configured key,
 * else the client's address. An unknown key counts against the address, so guessing keys is
 * limited like anything else.
 */
export const limitKey = (group: LimitedGroup, principal: string | null, address: string) =>
  principal === null ? `${group}:addr:${address}` : `${group}:key:${principal}`

/**
 * The client's address: the connection's peer, or, when the operator named the header a reverse
 * proxy writes it into, that header's first entry (the original client, as the proxy saw it).
 */
export const clientAddress = (
  limits: Pick<LimitsConfig, "clientAddressHeader">,
  headers: Readonly<Record<string, string | undefined>>,
  peer: string | undefined
): string => {
  const forwarded = limits.clientAddressHeader === null ? undefined : headers[limits.clientAddressHeader]
  const first = forwarded?.split(",")[0]?.trim()
  return first !== undefined && first !== "" ? first : (peer ?? "unknown")
}
