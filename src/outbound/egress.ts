/**
 * The egress rule: a process that serves (or runs a CLI command that dials out) sends HTTP only
 * to the endpoints its configuration names, or through the Connector, which vets and pins every
 * request to a resource. Libraries bring their own HTTP calls (`@x402/extensions` resolving a
 * `did:web` key id, the Stellar SDK's `stellar.toml` resolver, an exporter), and all of them use
 * the global `fetch`; so the global `fetch` is replaced, once the configuration is known, by one
 * that refuses any other destination. The Connector dials with the `fetch` beneath the guard, so
 * its vetted requests are the only ones that reach a host nobody configured.
 */

/** The `fetch` the guard replaced, while it is installed. */
let beneath: typeof fetch | null = null

/**
 * The `fetch` the Connector dials with: the one beneath the guard while it is installed, else the
 * global one (so a test that wraps the global `fetch` still sees every request).
 */
export const unguardedFetch = (): typeof fetch => beneath ?? globalThis.fetch

/** One configured endpoint: an origin, and the path its requests stay under. */
export interface EgressRule {
  readonly origin: string
  /** `/` for a whole origin; `/x402` admits `/x402` and `/x402/verify`, not `/x4021`. */
  readonly pathPrefix: string
}

/** Rules from endpoint URLs; an entry that is not an http(s) URL gives none. */
export const egressRules = (urls: ReadonlyArray<string | null | undefined>): ReadonlyArray<EgressRule> =>
  urls.flatMap((raw) => {
    if (raw === null || raw === undefined) return []
    try {
      const url = new URL(raw)
      if (url.protocol !== "http:" && url.protocol !== "https:") return []
      return [{ origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, "") || "/" }]
    } catch {
      return []
    }
  })

/**
 * Whether a request to `url` goes to a configured endpoint. Credentials in the URL are refused
 * outright. The path is compared once normalised by the URL parser, so `/x402/../admin` is
 * `/admin` before the decision.
 */
export const egressAllowed = (rules: ReadonlyArray<EgressRule>, url: URL): boolean => {
  if (url.username !== "" || url.password !== "") return false
  return rules.some(
    (rule) =>
      rule.origin === url.origin &&
      (rule.pathPrefix === "/" || url.pathname === rule.pathPrefix || url.pathname.startsWith(`${rule.pathPrefix}/`))
  )
}

/** The error a refused request rejects with: the destination's origin, never its path or query (they may hold a key). */
export class EgressRefused extends TypeError {
  readonly code = "EGRESS_REFUSED"
  constructor(readonly origin: string) {
    super(`outbound request to ${origin} refused: not a configured endpoint (the egress rule, docs/decisions.md)`)
    this.name = "EgressRefused"
  }
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])
/** Redirect hops a guarded request follows, each judged like the first. */
const MAX_REDIRECTS = 5

const originOf = (url: URL) => (url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol)

/**
 * A `fetch` that sends only to `rules`' endpoints. A redirect is followed by hand, each hop judged
 * like the first, since the platform would follow it to any host; a caller that asked for
 * `manual` or `error` gets the platform's behaviour. A refusal rejects at once: nothing is
 * resolved or connected.
 */
export const guardedFetch = (rules: ReadonlyArray<EgressRule>, base: typeof fetch = unguardedFetch()): typeof fetch => {
  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    let url = new URL(request.url)
    if (!egressAllowed(rules, url)) throw new EgressRefused(originOf(url))
    if (request.redirect !== "follow") return base(request)
    let current = new Request(request, { redirect: "manual" })
    for (let hop = 0; ; hop++) {
      const replay = current.clone()
      const response = await base(current)
      const location = response.headers.get("location")
      if (!REDIRECTS.has(response.status) || location === null) return response
      if (hop === MAX_REDIRECTS) throw new TypeError(`outbound request stopped after ${MAX_REDIRECTS} redirects`)
      void response.body?.cancel().catch(() => undefined)
      url = new URL(location, url)
      if (!egressAllowed(rules, url)) throw new EgressRefused(originOf(url))
      const headers = new Headers(replay.headers)
      // A credential meant for one endpoint never travels to another, as the platform's own redirect rule has it.
      if (url.origin !== new URL(replay.url).origin)
        for (const name of ["authorization", "proxy-authorization", "cookie"]) headers.delete(name)
      const keepsBody = response.status === 307 || response.status === 308
      current = new Request(url, {
        method: keepsBody || replay.method === "HEAD" ? replay.method : "GET",
        headers,
        ...(keepsBody && replay.body !== null ? { body: await replay.arrayBuffer() } : {}),
        redirect: "manual",
        signal: replay.signal
      })
    }
  }
  return Object.assign(guarded, { preconnect: () => undefined }) as typeof fetch
}

/**
 * Replaces the global `fetch` with `guardedFetch(rules)` (again on a second call, with the new
 * rules); the answer puts the platform's back. Installed by the command line once the
 * configuration is loaded, not by the service layers, so tests that run services in-process keep
 * talking to them through their own `fetch`.
 */
export const installEgressGuard = (rules: ReadonlyArray<EgressRule>): (() => void) => {
  const underlying = unguardedFetch()
  beneath = underlying
  globalThis.fetch = guardedFetch(rules, underlying)
  return removeEgressGuard
}

/** Puts back the `fetch` the guard replaced, if it is installed. */
export const removeEgressGuard = () => {
  if (beneath === null) return
  globalThis.fetch = beneath
  beneath = null
}
