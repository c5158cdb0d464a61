/**
 * The configuration: the file's schema (`ConfigFile`, each section in `src/config/` by its name),
 * the resolved `Config` every service reads as `AppConfig`, and `loadConfig`, which reads, decodes,
 * resolves and checks it. Every module imports the config from here; the sections are re-exported.
 */

import { dirname, resolve } from "node:path"
import { Context, Either, Schema } from "effect"
import { ApiKeyEntry, BudgetsConfig, LimitsConfig, SignerConfig } from "./config/access.js"
import { checkConsistency } from "./config/checks.js"
import { type ConfigError, decodeOptions, firstIssue, parsePort, readJson } from "./config/decoding.js"
import { bundledCatalog, demoOrigin, verticalOrigin } from "./config/demoCatalog.js"
import { DEFAULT_EMBEDDED, defaultEmbedded, FacilitatorEntry } from "./config/facilitators.js"
import { opt } from "./config/fields.js"
import { insecureLedgerUrl, LedgerConfig, type LedgerSettings, resolveLedger } from "./config/ledger.js"
import { BuyerConfig, EconomicProbesConfig } from "./config/payers.js"
import { CatalogSource, IngestionConfig, ProbesConfig, VerificationConfig } from "./config/probing.js"
import { TelemetryConfig } from "./config/telemetry.js"
import { DEMO_BEHAVIOURS, DemoConfig, type DemoSettings, VerticalConfig } from "./config/vertical.js"
import { CatalogEntry } from "./domain/resources.js"
import { StellarNetwork } from "./domain/stellar.js"
import { SupportedAsset } from "./domain/x402.js"

export * from "./config/access.js"
export * from "./config/checks.js"
export { ConfigError, decodeCatalog, firstIssue, parseJson, readText } from "./config/decoding.js"
export { bundledCatalog, demoOrigin, demoProviderId, reachableHost } from "./config/demoCatalog.js"
export * from "./config/facilitators.js"
export { LedgerConfig, type LedgerSettings, PUBLIC_LEDGER_ENDPOINTS, plainHttpOffLoopback } from "./config/ledger.js"
export * from "./config/payers.js"
export { CatalogSource, IngestionConfig, ProbesConfig, VerificationConfig } from "./config/probing.js"
export * from "./config/telemetry.js"
export * from "./config/vertical.js"

/** Testnet USDC, the SEP-41 wrapper of the classic asset. */
export const TESTNET_USDC = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"

const defaultAsset: SupportedAsset = {
  network: "stellar:testnet",
  assetContract: TESTNET_USDC,
  symbol: "USDC",
  decimals: 7,
  minimumAmount: "1",
  maximumAmount: "10000000000"
}

/**
 * The config file; its field names are a contract with operators (docs/decisions.md, Config field
 * names): add, never rename. Every field's `description` is its entry in docs/reference/configuration.md
 * (`npm run docs:config`).
 */
export const ConfigFile = Schema.Struct({
  host: opt(Schema.String, "127.0.0.1").annotations({
    description:
      "Listen address (`HOST` overrides). Without `apiKeys` only a loopback address is accepted unless `openMode`."
  }),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4020).annotations({
    description: "Listen port (`PORT` overrides)."
  }),
  database: opt(Schema.String.pipe(Schema.minLength(1)), "./data/sextant.db").annotations({
    description:
      'SQLite file (parent folder created), `":memory:"`, or a `postgres://` URL (`DATABASE_URL` overrides). Not quoted in config errors.',
    examples: ["./data/sextant.db", "postgres://user:password@127.0.0.1:5432/sextant"]
  }),
  network: opt(StellarNetwork, "stellar:testnet").annotations({
    description: "`stellar:testnet` or `stellar:pubnet`."
  }),
  asset: opt(SupportedAsset, defaultAsset).annotations({
    description: 'The SupportedAsset; amounts are in its base units (7 decimals: `"10000"` is $0.001).'
  }),
  facilitators: opt(Schema.Array(FacilitatorEntry), [DEFAULT_EMBEDDED]).annotations({
    description:
      'The facilitator backends, tried in this order: `{id, url, apiKey?}` for an HTTP facilitator (`apiKey` is sent as `Authorization: Bearer` to that backend only, and a redirect from it is an error answer, never followed), or `{id, type: "stellar", network, feeAccountKeyFile, channels?, minFeeBalanceXlm?, balanceCheckSeconds?, pollIntervalMs?}` for the embedded facilitator (docs/facilitator.md). The default is one embedded backend on testnet with its key in `./data/facilitator.key`; it reads the ledger only when a payment is verified or settled. `[]` configures none.',
    examples: [
      [{ id: "primary", url: "https://facilitator.example.com" }],
      [{ ...DEFAULT_EMBEDDED, id: "own", channels: 8 }]
    ]
  }),
  facilitatorPollSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30).annotations({
    description:
      "Seconds between `/supported` polls of every facilitator; also how soon one marked unhealthy is tried again."
  }),
  settleDeadlineSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 120).annotations({
    description:
      "A settle is answered within this, whatever its backends do: failover (a ledger read, then the next backend) happens only in this time, and what is still unknown at the deadline is 502 `SETTLEMENT_INDETERMINATE`. Each backend gets an even share of the time left, less a ledger read each."
  }),
  catalog: opt(Schema.NullOr(Schema.Union(Schema.Array(CatalogEntry), Schema.String)), null).annotations({
    description:
      "An array of ResourceRecord, or a path to a JSON file of them (relative to the config file; decoded when the store is open and only when its content differs from what the store loaded last, with the same one-line error and exit 2). `null` is the bundled demo catalog (`src/store/demo-catalog.json`), placed where `vertical` and `demo` listen, without the demo providers when `demo.enabled` is false. `status` and `verificationLevel` may be omitted and are ignored: they are earned. `amountUsd` must equal `amount` at 7 decimals. A resource of type `mcp` has its MCP server's Streamable HTTP endpoint as `url` and needs `resource.mcp`: `{kind?, toolName, transport?, inputSchema?, example?}` (`kind`: `tool`, the default, `resource` or `prompt`, with `toolName` the tool's or prompt's name or the resource's URI; `transport`: `streamable-http`, the default, or `sse`); an `http` resource may not have one."
  }),
  probes: opt(ProbesConfig, Schema.decodeSync(ProbesConfig)({})).annotations({
    description:
      "The probe schedule: how often each resource is probed, how long probes and their history are kept, and which targets they may reach."
  }),
  verification: opt(VerificationConfig, Schema.decodeSync(VerificationConfig)({})).annotations({
    description: "How evidence becomes metrics, levels and statuses (docs/verification.md)."
  }),
  ingestion: opt(IngestionConfig, Schema.decodeSync(IngestionConfig)({})).annotations({
    description:
      "What strangers may add to the catalog and how much of the probe workload it may take (docs/trust.md). Counted over untrusted entries (registration, imports, bazaar; not the catalog file's or what an operator listed) in the store, so instances sharing a database share them."
  }),
  signer: opt(SignerConfig, { ed25519KeyFile: "./data/signer.key" }).annotations({
    description:
      "`{ed25519KeyFile}`: the Ed25519 key file (generated on first start, mode 0600), or `{hmacSecret}` (16+ characters) for HMAC-SHA256 receipts."
  }),
  budgets: opt(BudgetsConfig, Schema.decodeSync(BudgetsConfig)({})).annotations({
    description: "Sponsored-fee and spend budgets of `/x402/settle`, over a rolling window."
  }),
  limits: opt(LimitsConfig, Schema.decodeSync(LimitsConfig)({})).annotations({
    description:
      "Request rate limits per principal (the API key's principal, else the client address), counted in the store so instances sharing a Postgres database share them."
  }),
  shutdownGraceSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30).annotations({
    description:
      "On SIGTERM or SIGINT, how long requests and settles in flight may take to finish before the process exits anyway (docs/operating.md)."
  }),
  apiKeys: opt(Schema.Array(ApiKeyEntry), []).annotations({
    description:
      "`[{principal, sha256, policy?, role?}]`. When any exist, settle, verify, validate, register, receipt creation, `/x402/facilitators`, `/x402/settlements*` and `/health/dependencies` need `Authorization: Bearer <key>`.",
    examples: [[{ principal: "agent-1", sha256: "<sextant keys hash output>", role: "buyer" }]]
  }),
  openMode: opt(Schema.Boolean, false).annotations({
    description:
      "With no `apiKeys`, allow `serve` to listen on a non-loopback `host` (every endpoint then open to the network); without it that start-up stops with exit 2."
  }),
  allowedHosts: opt(
    Schema.Array(
      Schema.String.pipe(
        Schema.pattern(/^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/i, {
          message: () => "expected a host name or address, without scheme or port"
        })
      )
    ),
    []
  ).annotations({
    description:
      "With no `apiKeys`, the names a request's `Host` and `Origin` may carry besides loopback names and addresses and `host`: behind a reverse proxy, the public name(s) it forwards under. Anything else is 403 `FOREIGN_ORIGIN` (a page in a browser must not drive an open service). Host names without scheme or port; with `apiKeys` the check is off.",
    examples: [["sextant.example.com"]]
  }),
  catalogSources: opt(Schema.Array(CatalogSource), []).annotations({
    description:
      "`[{id, url, intervalSeconds?, networks?}]`: discovery services to import from (docs/verification.md, Imports); ids must be unique.",
    examples: [[{ id: "cdp-bazaar", url: "https://bazaar.example.com", intervalSeconds: 3600 }]]
  }),
  vertical: opt(VerticalConfig, Schema.decodeSync(VerticalConfig)({})).annotations({
    description: "The paid reference vertical `serve` starts beside the service (docs/vertical.md)."
  }),
  ledger: opt(LedgerConfig, Schema.decodeSync(LedgerConfig)({})).annotations({
    description:
      "Where the service reads the Stellar ledger: transaction evidence, settlement reconciliation, the vertical and payments. A `null` URL is the configured network's public endpoint."
  }),
  economicProbes: opt(EconomicProbesConfig, Schema.decodeSync(EconomicProbesConfig)({})).annotations({
    description:
      "Economic probes: the service pays selected listed resources as a buyer would, with the operator's probe key, so the transaction success rate rests on payments it made itself."
  }),
  telemetry: opt(TelemetryConfig, Schema.decodeSync(TelemetryConfig)({})).annotations({
    description: "Traces: off until `otlpEndpoint` names a collector; nothing leaves the process otherwise."
  }),
  logFormat: opt(Schema.Literal("text", "json"), "text").annotations({
    description:
      "`text`: logfmt lines; `json`: one JSON object per line (`message`, `logLevel`, `timestamp`, `annotations`, `spans`, `fiberId`) for log shippers."
  }),
  demo: opt(DemoConfig, Schema.decodeSync(DemoConfig)({})).annotations({
    description: "The demo providers `serve` starts beside the vertical (docs/vertical.md)."
  }),
  buyer: opt(BuyerConfig, Schema.decodeSync(BuyerConfig)({})).annotations({
    description:
      "The buyer side (`sextant buy`, `sextant keys buyer-new`, the MCP `buy_resource` tool), run on the buyer's machine with the buyer's key. It pays on `network` in `asset`, simulating on `ledger.sorobanRpcUrl`."
  })
})
export type ConfigFile = typeof ConfigFile.Type

/** The resolved configuration: the file with env overrides applied, the catalog resolved and the ledger endpoints resolved. */
export interface Config extends Omit<ConfigFile, "catalog" | "ledger" | "demo"> {
  /** The inline catalog, or the bundled demo one placed; empty when `catalogFile` names the catalog. */
  readonly catalog: ReadonlyArray<CatalogEntry>
  /**
   * A catalog named by path. It is read and decoded at start by the catalog load
   * (`catalog/CatalogLoad.ts`), and only when the store did not load that same content last: an
   * unchanged 100k-entry file costs a hash, not a decode and a diff.
   */
  readonly catalogFile: string | null
  readonly ledger: LedgerSettings
  readonly demo: DemoSettings
}

/** The configuration every service reads, provided once by the entry point from `loadConfig`. */
export class AppConfig extends Context.Tag("sextant/AppConfig")<AppConfig, Config>() {}

export const decodeConfigFile = (input: unknown): Either.Either<ConfigFile, ConfigError> =>
  Schema.decodeUnknownEither(ConfigFile)(input, decodeOptions).pipe(Either.mapLeft((e) => firstIssue(e)))

/** The endpoints the vertical reads: its own when set, else the ledger's. */
export const verticalEndpoints = (config: Pick<Config, "vertical" | "ledger">) => ({
  horizonUrl: config.vertical.horizonUrl ?? config.ledger.horizonUrl,
  sorobanRpcUrl: config.vertical.sorobanRpcUrl ?? config.ledger.sorobanRpcUrl
})

const hasField = (raw: unknown, field: string) => typeof raw === "object" && raw !== null && field in raw

/**
 * Reads the file named by `--config` or SEXTANT_CONFIG (embedded defaults without one), applies
 * PORT / HOST / DATABASE_URL, resolves the catalog (a file is loaded at start), resolves the ledger endpoints for the network
 * and checks the cross-field rules.
 */
export const loadConfig = (
  configPath: string | undefined,
  env: Record<string, string | undefined>
): Either.Either<Config, ConfigError> =>
  Either.gen(function* () {
    const raw = configPath === undefined ? {} : yield* readJson(configPath, "config file")
    const file = yield* decodeConfigFile(raw)
    const baseDir = configPath === undefined ? process.cwd() : dirname(resolve(configPath))
    // The demo providers are what makes a first run show a choice; a configured catalog is a real deployment.
    const demo: DemoSettings = { ...file.demo, enabled: file.demo.enabled ?? file.catalog === null }
    const catalog =
      file.catalog === null
        ? yield* bundledCatalog({ vertical: file.vertical, demo })
        : typeof file.catalog === "string"
          ? []
          : file.catalog
    const catalogFile = typeof file.catalog === "string" ? resolve(baseDir, file.catalog) : null
    // The vertical and demo providers this config runs are its own: their origins are always probed
    // (and may be bought from), even on loopback.
    const ownVertical = file.vertical.enabled && file.vertical.port !== 0 ? [verticalOrigin(file.vertical)] : []
    const ownDemo = demo.enabled ? DEMO_BEHAVIOURS.map((b) => demoOrigin(demo, b)) : []
    const trusting = (origins: ReadonlyArray<string>) => [...new Set([...origins, ...ownVertical, ...ownDemo])]
    const ledger = yield* resolveLedger(file.ledger, file.network)
    const insecureVertical = insecureLedgerUrl([
      ["vertical.sorobanRpcUrl", file.vertical.sorobanRpcUrl],
      ["vertical.horizonUrl", file.vertical.horizonUrl]
    ])
    if (insecureVertical) return yield* Either.left(insecureVertical)
    const config: Config = {
      ...file,
      // Absent from the file: the embedded facilitator on the configured network (testnet unless set).
      facilitators: hasField(raw, "facilitators") ? file.facilitators : [defaultEmbedded(file.network)],
      ledger,
      vertical: { ...file.vertical, ...verticalEndpoints({ vertical: file.vertical, ledger }) },
      probes: { ...file.probes, trustedOrigins: trusting(file.probes.trustedOrigins) },
      buyer: { ...file.buyer, trustedOrigins: trusting(file.buyer.trustedOrigins) },
      demo,
      host: env.HOST ?? file.host,
      port: env.PORT !== undefined ? yield* parsePort(env.PORT, "PORT") : file.port,
      database: env.DATABASE_URL ?? file.database,
      catalog,
      catalogFile
    }
    const inconsistency = checkConsistency(config)
    if (inconsistency) return yield* Either.left(inconsistency)
    return config
  })
