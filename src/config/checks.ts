import type { Config } from "../config.js"
import { mcpFieldsRefusal } from "../domain/mcp.js"
import { type CatalogEntry, ceilingCoversAmount } from "../domain/resources.js"
import { usdMatchesBaseUnits } from "../domain/stellar.js"
import { ConfigError } from "./decoding.js"
import { isEmbedded } from "./facilitators.js"
import { DEMO_BEHAVIOURS } from "./vertical.js"

/** Rules of the resolved config a schema cannot state alone; each names the field at fault. */

/** A Postgres URL must parse; the message never repeats it, since it carries a password. */
const checkDatabase = (database: string): ConfigError | undefined => {
  if (!/^postgres(ql)?:/.test(database)) return undefined
  try {
    const url = new URL(database)
    if (url.hostname === "" || url.pathname.length <= 1) {
      return new ConfigError(
        "database",
        "a postgres URL needs a host and a database name: postgres://user:password@host:5432/db"
      )
    }
    return undefined
  } catch {
    return new ConfigError(
      "database",
      "not a valid postgres URL (expected postgres://user:password@host:5432/db; value not shown)"
    )
  }
}

/** Rules a schema cannot state alone: unique ids, and prices that agree at 7 decimals. */
export const checkConsistency = (config: Config): ConfigError | undefined => {
  const seen = new Set<string>()
  for (const [i, f] of config.facilitators.entries()) {
    if (seen.has(f.id)) return new ConfigError(`facilitators[${i}].id`, `duplicate facilitator id "${f.id}"`)
    seen.add(f.id)
    if (isEmbedded(f) && f.network !== config.network) {
      return new ConfigError(
        `facilitators[${i}].network`,
        `the embedded facilitator settles on ${f.network} but the service runs on ${config.network} (its ledger endpoints are that network's)`
      )
    }
  }
  const sourceIds = new Set<string>()
  for (const [i, source] of config.catalogSources.entries()) {
    if (sourceIds.has(source.id))
      return new ConfigError(`catalogSources[${i}].id`, `duplicate catalog source id "${source.id}"`)
    sourceIds.add(source.id)
  }
  // A catalog file is checked when it is loaded (catalog/catalogFile.ts), since an unchanged one is not decoded.
  const catalog = checkCatalog(config.catalog, config.asset.decimals)
  if (catalog) return catalog
  const ports = checkPorts(config)
  if (ports) return ports
  const database = checkDatabase(config.database)
  if (database) return database
  if (config.probes.leaseSeconds * 1000 <= config.probes.timeoutMs) {
    return new ConfigError("probes.leaseSeconds", "a claim must outlast a probe: leaseSeconds must exceed timeoutMs")
  }
  if (config.asset.network !== config.network) {
    return new ConfigError(
      "asset.network",
      `asset is on ${config.asset.network} but the service runs on ${config.network}`
    )
  }
  return undefined
}

/** The catalog's own rules a schema cannot state: unique resource ids, prices that agree at the asset's decimals, upto ceilings. */
export const checkCatalog = (catalog: ReadonlyArray<CatalogEntry>, decimals: number): ConfigError | undefined => {
  const resourceIds = new Set<string>()
  for (const [i, entry] of catalog.entries()) {
    if (resourceIds.has(entry.resource.id)) {
      return new ConfigError(`catalog[${i}].resource.id`, `duplicate resource id "${entry.resource.id}"`)
    }
    resourceIds.add(entry.resource.id)
    const mcpRefused = mcpFieldsRefusal(entry.resource)
    if (mcpRefused !== null) return new ConfigError(`catalog[${i}].resource.mcp`, mcpRefused)
    for (const [j, option] of entry.paymentOptions.entries()) {
      const at = `catalog[${i}].paymentOptions[${j}]`
      if (!usdMatchesBaseUnits(option.amountUsd, option.amount, decimals)) {
        return new ConfigError(
          `${at}.amountUsd`,
          `${option.amountUsd} USD is not ${option.amount} base units at 7 decimals`
        )
      }
      if (option.scheme === "upto") {
        if (option.maxAmount === undefined || option.maxAmountUsd === undefined) {
          return new ConfigError(`${at}.maxAmount`, "an upto option needs maxAmount and maxAmountUsd")
        }
        if (!usdMatchesBaseUnits(option.maxAmountUsd, option.maxAmount, decimals)) {
          return new ConfigError(
            `${at}.maxAmountUsd`,
            `${option.maxAmountUsd} USD is not ${option.maxAmount} base units at 7 decimals`
          )
        }
        if (!ceilingCoversAmount(option)) {
          return new ConfigError(`${at}.maxAmount`, "the ceiling is below the amount")
        }
      }
    }
  }
  return undefined
}

/** Two listeners of this process named on one port would stop start-up with a bind error; say which fields instead. */
const checkPorts = (config: Config): ConfigError | undefined => {
  const taken = new Map<number, string>()
  if (config.port !== 0) taken.set(config.port, "port")
  if (config.vertical.enabled && config.vertical.port !== 0 && !taken.has(config.vertical.port)) {
    taken.set(config.vertical.port, "vertical.port")
  }
  if (!config.demo.enabled) return undefined
  for (const behaviour of DEMO_BEHAVIOURS) {
    const port = config.demo.ports[behaviour]
    const other = taken.get(port)
    if (other !== undefined) return new ConfigError(`demo.ports.${behaviour}`, `port ${port} is also ${other}`)
    taken.set(port, `demo.ports.${behaviour}`)
  }
  return undefined
}
