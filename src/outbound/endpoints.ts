import { type Config, reachableHost } from "../config.js"
import { type EgressRule, egressRules } from "./egress.js"

/** Null in config means this service's own facilitator endpoints, on the service's host and port. */
export const facilitatorUrlFor = (config: Pick<Config, "host" | "port" | "vertical">): string =>
  config.vertical.facilitatorUrl ?? `http://${reachableHost(config.host)}:${config.port}/x402`

/**
 * The endpoints a configuration names, where the process may send HTTP without the Connector:
 * the facilitator backends, the ledger's Soroban RPC and Horizon, the vertical's own pair and its
 * facilitator (this service's `/x402` when unset), the OTLP collector, the catalog sources (their
 * imports go through the Connector; the CLI import may name one), and the Sextant service a buyer
 * routes through (`buyer.service`, or the `--service` a command was given).
 */
export const configuredEndpoints = (config: Config, extra: ReadonlyArray<string> = []): ReadonlyArray<EgressRule> =>
  egressRules([
    ...config.facilitators.map((backend) => ("url" in backend ? backend.url : null)),
    config.ledger.sorobanRpcUrl,
    config.ledger.horizonUrl,
    config.vertical.sorobanRpcUrl,
    config.vertical.horizonUrl,
    facilitatorUrlFor(config),
    config.telemetry.otlpEndpoint,
    ...config.catalogSources.map((source) => source.url),
    config.buyer.service,
    ...extra
  ])
