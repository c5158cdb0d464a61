import { lookup } from "node:dns/promises"
import { BlockList, isIP } from "node:net"
import { Data, Effect, Predicate } from "effect"

/**
 * Where probes may send traffic. A probe target comes from the catalog or from anyone calling
 * `/v1/validate`, so without this check the service could be pointed at its own host, the
 * private network or a cloud metadata endpoint (SSRF).
 */
export interface OutboundPolicy {
  readonly allowPrivateTargets: boolean
  /** Origins (`http://127.0.0.1:4021`) allowed even though they are private. */
  readonly trustedOrigins: ReadonlyArray<string>
}

export class OutboundTargetRefused extends Data.TaggedError("OutboundTargetRefused")<{ readonly reason: string }> {}
export class DnsFailure extends Data.TaggedError("DnsFailure")<{ readonly host: string; readonly reason: string }> {}

/** Special-purpose ranges (IANA registries); anything inside is not a public internet host. */
const IPV4_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network", including 0.0.0.0
  ["10.0.0.0", 8], // RFC 1918
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local, including the 169.254.169.254 metadata service
  ["168.63.129.16", 32], // Azure's wireserver / metadata address, public-looking but host-local
  ["172.16.0.0", 12], // RFC 1918
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.0.2.0", 24], // documentation
  ["192.88.99.0", 24], // 6to4 relay anycast
  ["192.168.0.0", 16], // RFC 1918
  ["198.18.0.0", 15], // benchmarking
  ["198.51.100.0", 24], // documentation
  ["203.0.113.0", 24], // documentation
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4] // reserved, including broadcast
]

const IPV6_BLOCKED: ReadonlyArray<readonly [string, number]> = [
  ["::", 96], // unspecified, loopback (::1) and IPv4-compatible addresses
  ["64:ff9b::", 96], // NAT64: reaches the embedded IPv4 address
  ["64:ff9b:1::", 48], // local-use NAT64
  ["100::", 64], // discard
  ["2001::", 32], // Teredo: embeds an IPv4 address
  ["2001:db8::", 32], // documentation
  ["2002::", 16], // 6to4: embeds an IPv4 address
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // deprecated site-local
  ["ff00::", 8] // multicast
]

/** IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) are checked against the IPv4 ranges by BlockList itself. */
const blocked = (() => {
  const list = new BlockList()
  for (const [network, prefix] of IPV4_BLOCKED) list.addSubnet(network, prefix, "ipv4")
  for (const [network, prefix] of IPV6_BLOCKED) list.addSubnet(network, prefix, "ipv6")
  return list
})()

/** True only for a syntactically valid IP address outside every special-purpose range. */
export const isPublicAddress = (address: string): boolean => {
  const family = isIP(address)
  if (family === 0) return false
  return !blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

const originOf = (value: string): string | null => {
  try {
    return new URL(value).origin
  } catch {
    return null
  }
}

const isTrusted = (url: URL, policy: OutboundPolicy) =>
  policy.trustedOrigins.some((origin) => originOf(origin) === url.origin)

/** URL hostnames keep IPv6 literals in brackets; addresses are compared without them. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, "$1")

/** Checks that need no network: scheme, credentials, and a literal address when the host is one. */
export const checkUrl = (raw: string, policy: OutboundPolicy): URL | OutboundTargetRefused => {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return new OutboundTargetRefused({ reason: `"${raw}" is not an absolute URL` })
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return new OutboundTargetRefused({
      reason: `only http and https targets are probed, not ${url.protocol.slice(0, -1)}`
    })
  }
  if (url.username !== "" || url.password !== "") {
    return new OutboundTargetRefused({ reason: "URLs with embedded credentials are not probed" })
  }
  const host = hostOf(url)
  if (isIP(host) !== 0) return checkAddresses(url, [host], policy) ?? url
  return url
}

/** The decision once the host's addresses are known: every one of them must be public. */
export const checkAddresses = (
  url: URL,
  addresses: ReadonlyArray<string>,
  policy: OutboundPolicy
): OutboundTargetRefused | null => {
  if (policy.allowPrivateTargets || isTrusted(url, policy)) return null
  const denied = addresses.find((address) => !isPublicAddress(address))
  if (denied === undefined) return null
  // The address itself is not named: it would tell the caller what an internal name resolves to.
  const via = denied === hostOf(url) ? "" : ` (${hostOf(url)} resolves to a non-public address)`
  return new OutboundTargetRefused({
    reason: `${url.origin} is a loopback, private, link-local or otherwise non-public address${via}; probes only reach public hosts`
  })
}

/** A target that passed the guard: the URL as named, and the addresses (all checked, in the resolver's order) its connection may go to. */
export interface Vetted {
  readonly url: URL
  readonly addresses: readonly [string, ...Array<string>]
}

/**
 * Resolves the host once and applies `checkAddresses` before any connection is made; the answer
 * names the addresses to connect to (those checked), which `Connector.dialPinned` connects to
 * instead of resolving the name again. A trusted or private-allowed target is resolved
 * too, so its connection is pinned like any other. The resolver is a parameter so the decision
 * can be tested without DNS.
 */
export const vetTarget = <E = never>(
  raw: string,
  policy: OutboundPolicy,
  resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, DnsFailure | E> = resolveHost
): Effect.Effect<Vetted, OutboundTargetRefused | DnsFailure | E> =>
  Effect.gen(function* () {
    const checked = checkUrl(raw, policy)
    if (Predicate.isTagged(checked, "OutboundTargetRefused")) return yield* checked
    const host = hostOf(checked)
    if (isIP(host) !== 0) return { url: checked, addresses: [host] }
    const addresses = yield* resolve(host)
    const refused = checkAddresses(checked, addresses, policy)
    if (refused) return yield* refused
    const [first, ...rest] = addresses
    if (first === undefined) return yield* new DnsFailure({ host, reason: "no address" })
    return { url: checked, addresses: [first, ...rest] }
  })

/** `vetTarget`'s decision alone, for callers that only ask whether a URL may be reached. */
export const guardTarget = <E = never>(
  raw: string,
  policy: OutboundPolicy,
  resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, DnsFailure | E> = resolveHost
): Effect.Effect<URL, OutboundTargetRefused | DnsFailure | E> =>
  Effect.map(vetTarget(raw, policy, resolve), (vetted) => vetted.url)

export const resolveHost = (host: string): Effect.Effect<ReadonlyArray<string>, DnsFailure> =>
  Effect.tryPromise({
    try: () => lookup(host, { all: true, verbatim: true }),
    catch: (e) => new DnsFailure({ host, reason: (e as NodeJS.ErrnoException).code ?? String(e) })
  }).pipe(Effect.map((entries) => entries.map((entry) => entry.address)))
