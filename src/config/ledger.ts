import { Either, Schema } from "effect"
import type { StellarNetwork } from "../domain/stellar.js"
import { ConfigError } from "./decoding.js"
import { HttpUrl, opt, PositiveInt } from "./fields.js"

/** The `ledger` section and its endpoints resolved for the configured network. */

/**
 * Where the service reads the Stellar ledger (`src/ledger/`): transaction evidence, settlement
 * reconciliation and the vertical. A null URL means the public endpoint of the configured network.
 */
export const LedgerConfig = Schema.Struct({
  sorobanRpcUrl: opt(Schema.NullOr(HttpUrl), null).annotations({
    description:
      "Soroban RPC every ledger read goes to first: transactions in its retention window, nonce entries, `transfer` events, the latest ledger. `null` is the network's public RPC (`https://soroban-testnet.stellar.org` on testnet); `stellar:pubnet` has none, so there it must be set. Off loopback it must be `https` (as must `ledger.horizonUrl`, `vertical.horizonUrl` and `vertical.sorobanRpcUrl`). Not quoted in config errors."
  }),
  horizonUrl: opt(Schema.NullOr(HttpUrl), null).annotations({
    description:
      "Horizon, asked for a transaction RPC no longer holds. `null` is `https://horizon-testnet.stellar.org` on testnet, `https://horizon.stellar.org` on pubnet. A Horizon that skips result meta (SDF's, since Protocol 22) confirms no transfer older than RPC's retention."
  }),
  confirmTimeoutSeconds: opt(PositiveInt, 120).annotations({
    description: "How long a claimed transaction may take to appear on the ledger before its evidence is rejected."
  }),
  timeoutMs: opt(PositiveInt, 8000).annotations({
    description: "Bound on each RPC or Horizon call; a call that runs over counts as the ledger being unavailable."
  }),
  inclusionFeeStroops: opt(PositiveInt, 10_000).annotations({
    description:
      "The inclusion fee the buyer and the economic probes bid on a payment's transaction; the resource fee is what simulation asks (the network's minimum of 100 times out when pubnet is busy)."
  }),
  pollIntervalSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 5).annotations({
    description:
      "How often `serve` checks pending payments on the ledger and reconciles indeterminate settlements (fractions allowed; a ledger closes about every 5 s)."
  })
})
export type LedgerConfig = typeof LedgerConfig.Type

/** The `ledger` block with its endpoints resolved for the configured network. */
export interface LedgerSettings extends LedgerConfig {
  readonly sorobanRpcUrl: string
  readonly horizonUrl: string
}

/**
 * The public endpoints of each network (developers.stellar.org, "Networks"). Mainnet lists only
 * ecosystem providers for RPC, so its Soroban RPC has no default and must be configured.
 */
export const PUBLIC_LEDGER_ENDPOINTS: Record<
  StellarNetwork,
  { readonly horizonUrl: string; readonly sorobanRpcUrl: string | null }
> = {
  "stellar:testnet": {
    horizonUrl: "https://horizon-testnet.stellar.org",
    sorobanRpcUrl: "https://soroban-testnet.stellar.org"
  },
  "stellar:pubnet": { horizonUrl: "https://horizon.stellar.org", sorobanRpcUrl: null }
}

/**
 * A plain-http URL whose host is not loopback: what the ledger answers settles and confirms
 * payments, so it is read over TLS unless it is a node on this machine.
 */
export const plainHttpOffLoopback = (url: string): boolean => {
  const parsed = URL.parse(url)
  if (parsed === null || parsed.protocol !== "http:") return false
  const host = parsed.hostname.replace(/^\[|\]$/g, "").toLowerCase()
  return !(host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host))
}

/** The first of `urls` (by config path) read over plain http off loopback. */
export const insecureLedgerUrl = (urls: ReadonlyArray<readonly [string, string | null]>): ConfigError | undefined => {
  const found = urls.find(([, url]) => url !== null && plainHttpOffLoopback(url))
  return (
    found &&
    new ConfigError(found[0], "a ledger endpoint off loopback must use https: its answers settle and confirm payments")
  )
}

/** The `ledger` block with each null endpoint replaced by the network's public one. */
export const resolveLedger = (
  ledger: LedgerConfig,
  network: StellarNetwork
): Either.Either<LedgerSettings, ConfigError> => {
  const defaults = PUBLIC_LEDGER_ENDPOINTS[network]
  const sorobanRpcUrl = ledger.sorobanRpcUrl ?? defaults.sorobanRpcUrl
  if (sorobanRpcUrl === null) {
    return Either.left(
      new ConfigError(
        "ledger.sorobanRpcUrl",
        `${network} has no public Soroban RPC endpoint to default to: set the URL of your RPC provider`
      )
    )
  }
  const insecure = insecureLedgerUrl([
    ["ledger.sorobanRpcUrl", ledger.sorobanRpcUrl],
    ["ledger.horizonUrl", ledger.horizonUrl]
  ])
  if (insecure) return Either.left(insecure)
  return Either.right({ ...ledger, sorobanRpcUrl, horizonUrl: ledger.horizonUrl ?? defaults.horizonUrl })
}
