import { isIP } from "node:net"
import { Context, type Effect } from "effect"
import { unguardedFetch } from "./egress.js"
import { type DnsFailure, hostOf, resolveHost, type Vetted } from "./outboundGuard.js"

/**
 * The one way a request to a resource leaves this process: probes, `/v1/validate`, registration
 * documents, catalog imports, economic probes and the buyer's paid request all connect through
 * `dialPinned`, to the address the outbound guard checked. Bun's `fetch` takes no agent or lookup
 * hook, so a name handed to it would be resolved a second time, and a DNS answer that changed in
 * between (rebinding) would reach whatever the check refused. Instead the URL's host is replaced by
 * the checked address; the `Host` header and the TLS server name keep the original name, so
 * virtual hosts and certificates are judged as before.
 */

export type Resolve = (host: string) => Effect.Effect<ReadonlyArray<string>, DnsFailure>
export type Dial = (url: URL, init: BunFetchRequestInit) => Promise<Response>

/** How a host name becomes addresses: the system resolver, unless a test swaps it. */
export class Resolver extends Context.Reference<Resolver>()("sextant/Resolver", {
  defaultValue: (): Resolve => resolveHost
}) {}

/**
 * What opens the connection to an address: Bun's fetch beneath the egress guard (a vetted, pinned
 * request is the one path to hosts nobody configured), unless a test swaps it.
 */
export class Dialer extends Context.Reference<Dialer>()("sextant/Dialer", {
  defaultValue: (): Dial => (url, init) => unguardedFetch()(url, init)
}) {}

/** The URL with its host replaced by a checked address (bracketed when IPv6), port, path and query kept. */
export const pinnedUrl = (url: URL, address: string): URL => {
  const pinned = new URL(url.href)
  pinned.hostname = isIP(address) === 6 ? `[${address}]` : address
  return pinned
}

/** Failures where nothing was sent: the next checked address may be tried (a name with `::1` and `127.0.0.1`, one listening). */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"])
const notConnected = (e: unknown) =>
  typeof e === "object" && e !== null && NOT_CONNECTED.has(String((e as { code?: unknown }).code))

/**
 * Sends one request to a vetted address, the next one only when the previous refused the
 * connection: never through a proxy from the environment (it would resolve the name itself), never
 * following redirects (each hop is vetted by the caller), with the original `Host` and, over TLS,
 * the original name for SNI and the certificate check.
 */
export const dialPinned = async (
  dial: Dial,
  vetted: Vetted,
  init: {
    readonly method: string
    readonly headers: Record<string, string>
    readonly body?: string
    readonly signal: AbortSignal
  }
): Promise<Response> => {
  const named = hostOf(vetted.url)
  const tls = vetted.url.protocol === "https:" && isIP(named) === 0 ? { tls: { serverName: named } } : {}
  const request = {
    method: init.method,
    headers: { ...init.headers, host: vetted.url.host },
    ...(init.body === undefined ? {} : { body: init.body }),
    redirect: "manual",
    proxy: false,
    signal: init.signal,
    ...tls
  } as BunFetchRequestInit
  const [first, ...others] = vetted.addresses
  let attempt = dial(pinnedUrl(vetted.url, first), request)
  for (const address of others) {
    attempt = attempt.catch((e: unknown) => {
      if (!notConnected(e) || init.signal.aborted) throw e
      return dial(pinnedUrl(vetted.url, address), request)
    })
  }
  return attempt
}

/** At most `maxBytes` of the body; null when it is longer (the rest is not read). A failed read rejects. */
export const readUpTo = async (response: Response, maxBytes: number): Promise<Buffer | null> => {
  const reader = response.body?.getReader()
  if (reader === undefined) return Buffer.alloc(0)
  const chunks: Array<Uint8Array> = []
  let bytes = 0
  try {
    while (bytes <= maxBytes) {
      const { value, done } = await reader.read()
      if (done) break
      chunks.push(value)
      bytes += value.length
    }
  } finally {
    void reader.cancel().catch(() => undefined)
  }
  return bytes > maxBytes ? null : Buffer.concat(chunks)
}
