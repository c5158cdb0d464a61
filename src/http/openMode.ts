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
