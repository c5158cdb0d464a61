/**
 * Where the vertical may fetch an issuer's stellar.toml from. Anyone can set an account's home
 * domain, so a domain naming a loopback or private address would make this service fetch from
 * its own network; those are skipped unless the operator allows them (the test fixtures do).
 * Public domains are fetched over https only; private ones, when allowed, over http.
 */
export type HomeDomainTarget = { readonly allowHttp: boolean } | { readonly skip: string }

const HOST_WITH_PORT = /^([a-z0-9-]+(?:\.[a-z0-9-]+)*)(?::(\d{1,5}))?$/

const isPrivateIpv4 = (host: string): boolean => {
  const parts = host.split(".")
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p))) return false
  const [a = 0, b = 0] = parts.map(Number)
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168)
  )
}

const isPrivateHost = (host: string): boolean =>
  host === "localhost" || host.endsWith(".localhost") || host.endsWith(".internal") || isPrivateIpv4(host)

export const homeDomainTarget = (domain: string, allowPrivate: boolean): HomeDomainTarget => {
  const match = HOST_WITH_PORT.exec(domain.toLowerCase())
  if (!match) return { skip: `home domain "${domain}" is not a host name` }
  if (!isPrivateHost(match[1] ?? "")) return { allowHttp: false }
  return allowPrivate ? { allowHttp: true } : { skip: `home domain "${domain}" is a private address; not fetched` }
}
