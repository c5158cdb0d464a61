import { BlockList, isIP } from "node:net"
import { type Config, ConfigError } from "../config.js"

const loopback = (() => {
  const list = new BlockList()
  list.addSubnet("127.0.0.0", 8, "ipv4")
  list.addAddress("::1", "ipv6")
  return list
})()

/** A listen address only this machine can reach: `localhost`, 127.0.0.0/8, `::1` (brackets allowed). */
export const isLoopbackHost = (host: string): boolean => {
  const bare = host.replace(/^\[(.*)\]$/, "$1")
  if (bare.toLowerCase() === "localhost") return true
  const family = isIP(bare)
  return family !== 0 && loopback.check(bare, family === 4 ? "ipv4" : "ipv6")
}

/**
 * Protected mode: with no API keys, validate, register, settle, the settlement journal and
 * `/health/dependencies` are open to whoever reaches the port, so `serve` stops unless it listens
 * on loopback or the operator said `openMode: true`.
 */
export const openModeRefusal = (config: Pick<Config, "host" | "apiKeys" | "openMode">): ConfigError | undefined =>
  config.apiKeys.length > 0 || config.openMode || isLoopbackHost(config.host)
    ? undefined
    : new ConfigError(
        "host",
        `"${config.host}" is not loopback and no apiKeys are configured: every endpoint would be open to the network; configure apiKeys, listen on 127.0.0.1, or set "openMode": true`
      )

/** The host name of a `Host` header (`name`, `name:port`, `[v6]:port`), lower-cased; null when it has none. */
const hostNameOf = (host: string): string | null => {
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(host.trim())
  const name = match?.[1]?.toLowerCase() ?? ""
  return name === "" ? null : name
}

/** Whether a host name (brackets allowed) names this service: loopback, the configured `host`, or `allowedHosts`. */
const namesThisService = (config: Pick<Config, "host" | "allowedHosts">, name: string) =>
  isLoopbackHost(name) ||
  [config.host, ...config.allowedHosts].some(
    (allowed) => allowed.toLowerCase() === name || `[${allowed.toLowerCase()}]` === name
  )

/**
 * Why a request is refused as coming from elsewhere, or undefined when it is taken. Only without
 * API keys (open mode, loopback or not): every caller there is anonymous, so a web page that
 * rebinds its name to 127.0.0.1, or posts cross-site to it, would act as the operator's own
 * client. Its `Host` must name this service (loopback, `host`, `allowedHosts`; any port), and an
 * `Origin`, when present, must be an http(s) origin whose host does too. With keys configured a
 * page holds no key, so the check is off.
 */
export const foreignRequestRefusal = (
  config: Pick<Config, "host" | "allowedHosts" | "apiKeys">,
  headers: Readonly<Record<string, string | undefined>>
): string | undefined => {
  if (config.apiKeys.length > 0) return undefined
  const host = headers.host
  const hostName = host === undefined ? null : hostNameOf(host)
  if (hostName === null || !namesThisService(config, hostName)) {
    return `this service without API keys answers only requests addressed to a loopback name, "${config.host}" or allowedHosts, not to Host ${JSON.stringify(host ?? "")}`
  }
  const origin = headers.origin
  if (origin === undefined) return undefined
  const url = URL.canParse(origin) ? new URL(origin) : null
  if (
    url === null ||
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    !namesThisService(config, url.hostname.toLowerCase())
  ) {
    return `this service without API keys refuses requests sent from the web page at Origin ${JSON.stringify(origin)}`
  }
  return undefined
}
