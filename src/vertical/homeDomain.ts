import { Effect } from "effect"
import { type DnsFailure, guardTarget, resolveHost } from "../outbound/outboundGuard.js"

/**
 * Where the vertical may fetch an issuer's stellar.toml from. Anyone can set an account's home
 * domain, so a domain naming (or resolving to) a loopback, private or metadata address would make
 * this service fetch from its own network. The probes' outbound guard decides, so both share one
 * list of forbidden ranges and one way of reading numeric hosts (`2130706433`, `0x7f.0.0.1`).
 * Public domains are fetched over https only; private ones, when the operator allows them (the
 * test fixtures do), over http.
 */
export type HomeDomainTarget = { readonly allowHttp: boolean } | { readonly skip: string }

const HOST_WITH_PORT = /^[a-z0-9-]+(?:\.[a-z0-9-]+)*(?::\d{1,5})?$/

export const homeDomainTarget = (
  domain: string,
  allowPrivate: boolean,
  resolve: (host: string) => Effect.Effect<ReadonlyArray<string>, DnsFailure> = resolveHost
): Effect.Effect<HomeDomainTarget> => {
  if (!HOST_WITH_PORT.test(domain.toLowerCase()))
    return Effect.succeed({ skip: `home domain "${domain}" is not a host name` })
  if (allowPrivate) return Effect.succeed({ allowHttp: true })
  return guardTarget(
    `https://${domain}/.well-known/stellar.toml`,
    { allowPrivateTargets: false, trustedOrigins: [] },
    resolve
  ).pipe(
    Effect.match({
      onSuccess: (): HomeDomainTarget => ({ allowHttp: false }),
      onFailure: (e): HomeDomainTarget =>
        e._tag === "OutboundTargetRefused"
          ? { skip: `home domain "${domain}" is not a public host; not fetched` }
          : { skip: `home domain "${domain}" does not resolve (${e.reason})` }
    })
  )
}
