import { Context, Either, ParseResult, Schema } from "effect"
import { readFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import demoCatalog from "./store/demo-catalog.json" with { type: "json" }
import { AgentPolicy } from "./domain/policy.js"
import { mcpFieldsRefusal } from "./domain/mcp.js"
import { CatalogEntry, ceilingCoversAmount } from "./domain/resources.js"
import { BaseUnits, StellarAddress, StellarNetwork, usdMatchesBaseUnits } from "./domain/stellar.js"
import { SupportedAsset } from "./domain/x402.js"

/** Testnet USDC, the SEP-41 wrapper of the classic asset. */
export const TESTNET_USDC = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegativeNumber = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
const Ratio = Schema.Number.pipe(Schema.between(0, 1))
const opt = <S extends Schema.Schema.Any>(schema: S, value: Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: () => value })

const HttpUrl = Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/, { message: () => "expected an http(s) URL" }))

export const FacilitatorBackend = Schema.Struct({
  id: Schema.String.pipe(Schema.minLength(1)),
  url: HttpUrl,
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
})
export type FacilitatorBackend = typeof FacilitatorBackend.Type

/**
 * Another discovery service to import from: a Bazaar-shaped `GET <url>/discovery/resources`
 * (or `url` itself when it already ends so), pulled every `intervalSeconds`. Only items payable on
 * this deployment's network and asset are kept; `networks`, when given, narrows that further.
 */
export const CatalogSource = Schema.Struct({
  id: Schema.String.pipe(
    Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => "expected a lowercase id such as \"cdp-bazaar\"" })
  ),
  url: Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/, { message: () => "expected an http(s) URL" })),
  intervalSeconds: opt(PositiveInt, 3600),
  networks: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1))))
})
export type CatalogSource = typeof CatalogSource.Type

/**
 * The outbound guard's fields (`verification/outboundGuard.ts`), shared by probes and the buyer:
 * both send requests to URLs a catalog named, which must not reach private networks unless trusted.
 */
const outboundGuardFields = {
  allowPrivateTargets: opt(Schema.Boolean, false),
  /**
   * Origins that may be reached even though they are private. None by default: `loadConfig` adds
   * the origins this process itself serves (the vertical, the demo providers), only when they run.
   */
  trustedOrigins: opt(Schema.Array(Schema.String), [])
}

export const ProbesConfig = Schema.Struct({
  /** Each resource is probed once per interval, at its own due time (spread over the interval by its id). */
  intervalSeconds: opt(PositiveInt, 60),
  timeoutMs: opt(PositiveInt, 5000),
  concurrency: opt(PositiveInt, 8),
  /**
   * How long a claim on a due resource holds: another instance takes it only after this, so an
   * instance that died gives its share back within one lease. Must exceed a probe (timeoutMs).
   */
  leaseSeconds: opt(PositiveInt, 60),
  /**
   * Accepted and ignored: config field names are a contract (add, never rename). Per-resource
   * slots now spread probes over the interval, which the random jitter used to do.
   */
  jitter: Schema.optional(Ratio),
  ...outboundGuardFields,
  /** Hourly rollups of probes are kept this long. */
  retentionDays: opt(PositiveInt, 7),
  /** Raw observations are kept this long; older history is the hourly rollups. */
  rawRetentionHours: opt(PositiveInt, 2),
  maxBodyBytes: opt(PositiveInt, 65536),
  /** Share above the advertised price a challenge may ask before the resource is quarantined. */
  priceTolerance: opt(NonNegativeNumber, 0.05)
})
export type ProbesConfig = typeof ProbesConfig.Type

export const VerificationConfig = Schema.Struct({
  /** Metric window, hours. */
  windowHours: opt(PositiveInt, 24),
  /** Probes in the window at which the sample-size term of confidence reaches 1 - 1/e. */
  confidenceSampleScale: opt(PositiveInt, 12),
  /** Seconds after the last observation at which the freshness term has halved. */
  confidenceHalfLifeSeconds: opt(PositiveInt, 3600),
  /** Evidence older than this makes policy answer VERIFICATION_TOO_OLD; a policy may tighten it. */
  maxEvidenceAgeSeconds: opt(PositiveInt, 86400),
  degradedBelow: opt(Ratio, 0.8),
  offlineAfterFailures: opt(PositiveInt, 3),
  continuousMinProbes: opt(PositiveInt, 24),
  continuousMinAvailability: opt(Ratio, 0.95),
  /**
   * Distinct payers whose confirmed payments (settles, receipts) a resource needs before they
   * count: for level 3 (ever) and for transactionSuccessRate (in the window). The operator's own
   * economic probes count without it. One buyer is too easily the provider itself.
   */
  minDistinctPayers: opt(PositiveInt, 2),
  /** A listed resource whose probes have all been unhealthy this long leaves discovery until a healthy probe. */
  delistAfterHours: opt(PositiveInt, 72),
  /**
   * An unlisted resource `/v1/validate` created is deleted (with its observations) once nobody has
   * validated it for this long, so anyone's one-off URLs do not pile up in the store.
   */
  unlistedRetentionHours: opt(PositiveInt, 168)
})
export type VerificationConfig = typeof VerificationConfig.Type

/**
 * What strangers may add to the catalog and how much of the probe workload it may take
 * (docs/trust.md). Counted over untrusted entries (registration, import, bazaar; not the catalog
 * file's or what an operator listed), in the store, so instances sharing a database share them.
 */
export const IngestionConfig = Schema.Struct({
  /** Untrusted entries one source may hold ("registration", "bazaar", each "import:<id>"): the probe targets it can add. */
  maxPerSource: opt(PositiveInt, 10_000),
  /** Untrusted entries at one origin (scheme, host, port), whoever added them. */
  maxPerOrigin: opt(PositiveInt, 100),
  /** Untrusted entries one principal added: an API key's principal, a bazaar payer, "anonymous" in open mode. */
  maxPerPrincipal: opt(PositiveInt, 500),
  /** Untrusted entries naming one payee (payTo) in their payment options. */
  maxPerPayee: opt(PositiveInt, 100),
  /** An untrusted entry unhealthy this long is deleted with its observations (an operator's quarantine keeps it). */
  retireAfterHours: opt(PositiveInt, 168),
  /** An unhealthy untrusted entry is probed at most once per this many probe intervals (doubling from 1 while it stays unhealthy). */
  maxBackoffIntervals: opt(PositiveInt, 64),
  /** Probes in flight at once for untrusted entries, in their own lane beside the trusted one (probes.concurrency). */
  concurrency: opt(PositiveInt, 4)
})
export type IngestionConfig = typeof IngestionConfig.Type

export const BudgetsConfig = Schema.Struct({
  windowSeconds: opt(PositiveInt, 3600),
  /** Each settlement reserves this many stroops of sponsored fee, whatever it really costs. */
  feeCeilingStroops: opt(PositiveInt, 1_000_000),
  globalFeeStroops: opt(PositiveInt, 100_000_000),
  perPrincipalFeeStroops: opt(PositiveInt, 10_000_000),
  spendWindowUsd: opt(NonNegativeNumber, 10)
})
export type BudgetsConfig = typeof BudgetsConfig.Type

/** At most `requests` per `windowSeconds` for one principal; null switches the limit off. */
export const RateLimit = Schema.NullOr(Schema.Struct({ requests: PositiveInt, windowSeconds: PositiveInt }))
export type RateLimit = typeof RateLimit.Type

/**
 * Request rate limits per principal (the API key's principal, else the client address), per
 * endpoint group, counted in the store so instances sharing a Postgres database share them.
 */
export const LimitsConfig = Schema.Struct({
  /** `POST /v1/validate`: each call sends traffic to a third party. */
  validate: opt(RateLimit, { requests: 60, windowSeconds: 60 }),
  /** `POST /v1/resources/register`: each call probes up to 100 routes of an origin. */
  register: opt(RateLimit, { requests: 10, windowSeconds: 60 }),
  /** `POST /v1/receipts`. */
  receipts: opt(RateLimit, { requests: 300, windowSeconds: 60 }),
  /** `POST /x402/verify`. */
  verify: opt(RateLimit, { requests: 1200, windowSeconds: 60 }),
  /** `POST /x402/settle`. */
  settle: opt(RateLimit, { requests: 1200, windowSeconds: 60 }),
  /**
   * Behind a reverse proxy every client has the proxy's address: name the header the proxy writes
   * the client's address into (e.g. "x-forwarded-for"). Only set it when a proxy you run always
   * writes that header, or clients could pick their own address.
   */
  clientAddressHeader: opt(Schema.NullOr(Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/, { message: () => "expected a lowercase header name" }))), null),
  /**
   * How many proxies you run in front of the service, each appending the address it saw on the
   * right of `clientAddressHeader`: the entry this many from the right is the client's address
   * (1: the right-most). Entries further left are the client's own to choose.
   */
  trustedProxyHops: opt(PositiveInt, 1)
})
export type LimitsConfig = typeof LimitsConfig.Type

export const SignerConfig = Schema.Union(
  Schema.Struct({ ed25519KeyFile: Schema.String.pipe(Schema.minLength(1)) }),
  Schema.Struct({ hmacSecret: Schema.String.pipe(Schema.minLength(16)) })
)
export type SignerConfig = typeof SignerConfig.Type

export const ApiKeyEntry = Schema.Struct({
  principal: Schema.String.pipe(Schema.minLength(1)),
  sha256: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected lowercase hex SHA-256" })),
  /** The principal's own buyer policy, enforced on every settle it makes together with the request's servicePolicy. */
  policy: Schema.optional(AgentPolicy),
  /** "operator" may curate the catalog (quarantine, list, unlist, delete); "buyer" (the default, when absent) may not. */
  role: Schema.optional(Schema.Literal("operator", "buyer"))
})
export type ApiKeyEntry = typeof ApiKeyEntry.Type

export const VerticalConfig = Schema.Struct({
  /** Start the reference vertical beside the service on `serve`. */
  enabled: opt(Schema.Boolean, true),
  host: opt(Schema.String, "127.0.0.1"),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4021),
  /** The `<vertical>` path segment: endpoints live under `/<name>/v1/rwa/`. */
  name: opt(Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/)), "stellar-intel"),
  payTo: opt(StellarAddress, "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"),
  /** Facilitator URL; null means this service's own `/x402`. */
  facilitatorUrl: opt(Schema.NullOr(Schema.String), null),
  /** Horizon it reads; null means `ledger.horizonUrl`. */
  horizonUrl: opt(Schema.NullOr(Schema.String), null),
  /** Soroban RPC it reads; null means `ledger.sorobanRpcUrl`. */
  sorobanRpcUrl: opt(Schema.NullOr(Schema.String), null),
  prices: opt(
    Schema.Struct({
      inspect: BaseUnits,
      changes: BaseUnits,
      compliance: BaseUnits,
      eligibility: BaseUnits
    }),
    { inspect: "10000", changes: "20000", compliance: "20000", eligibility: "5000" }
  ),
  /** Origin buyers reach the vertical at (behind a proxy); null means http://<host>:<bound port>. */
  publicUrl: opt(
    Schema.NullOr(
      Schema.String.pipe(
        Schema.pattern(/^https?:\/\/[^/\s]+$/, { message: () => "expected an origin such as https://intel.example.com" })
      )
    ),
    null
  ),
  /** Sent as `Authorization: Bearer` to the facilitator; needed when the service has apiKeys configured. */
  facilitatorApiKey: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null),
  /** Verify and settle wait this long; settle waits for the ledger, so it is generous. */
  facilitatorTimeoutMs: opt(PositiveInt, 60000),
  /** Bound on each Horizon / Soroban RPC / stellar.toml call. */
  upstreamTimeoutMs: opt(PositiveInt, 8000),
  /** Fetch stellar.toml from home domains that are loopback or private addresses (over http); tests only. */
  allowPrivateHomeDomains: opt(Schema.Boolean, false),
  /** A mint or burn is "large" from this share of the current supply. */
  largeTransferShare: opt(Ratio, 0.01)
})
export type VerticalConfig = typeof VerticalConfig.Type

/**
 * The demo providers `serve` starts beside the vertical (src/demo/), one per behaviour. Each sells
 * what the bundled demo catalog lists for provider `demo-<behaviour>`, through the vertical's app.
 */
export const DEMO_BEHAVIOURS = ["fast", "slow", "flaky", "raiser"] as const
export type DemoBehaviour = (typeof DEMO_BEHAVIOURS)[number]

/** A port a catalog URL can name before anything listens: never 0. */
const FixedPort = Schema.Int.pipe(Schema.between(1, 65535))

export const DemoConfig = Schema.Struct({
  /** Start the demo providers on `serve`; null means "when no catalog is configured" (the bundled one lists them). */
  enabled: opt(Schema.NullOr(Schema.Boolean), null),
  host: opt(Schema.String, "127.0.0.1"),
  ports: opt(
    Schema.Struct({
      fast: opt(FixedPort, 4022),
      slow: opt(FixedPort, 4023),
      flaky: opt(FixedPort, 4024),
      raiser: opt(FixedPort, 4025)
    }),
    { fast: 4022, slow: 4023, flaky: 4024, raiser: 4025 }
  ),
  /** How long the slow provider waits before each answer. */
  slowDelayMs: opt(Schema.Int.pipe(Schema.nonNegative()), 400),
  /** Share of the flaky provider's requests answered 500, spread evenly. */
  flakyFailureShare: opt(Ratio, 0.5),
  /** Seconds after start at which the price raiser's challenges start asking more than it advertises. */
  priceRaiseAfterSeconds: opt(NonNegativeNumber, 60),
  /** What the raised challenges ask, as a multiple of the advertised price (above 1 + probes.priceTolerance to be quarantined). */
  priceRaiseFactor: opt(Schema.Number.pipe(Schema.finite(), Schema.greaterThan(1)), 2)
})
export type DemoConfig = typeof DemoConfig.Type

/** The `demo` block with `enabled` resolved. */
export interface DemoSettings extends DemoConfig {
  readonly enabled: boolean
}

/**
 * Where the service reads the Stellar ledger (`src/ledger/`): transaction evidence, settlement
 * reconciliation and the vertical. A null URL means the public endpoint of the configured network.
 */
export const LedgerConfig = Schema.Struct({
  sorobanRpcUrl: opt(Schema.NullOr(HttpUrl), null),
  horizonUrl: opt(Schema.NullOr(HttpUrl), null),
  /** How long a claimed transaction may take to appear on the ledger before it is rejected. */
  confirmTimeoutSeconds: opt(PositiveInt, 120),
  /** Bound on each Soroban RPC or Horizon call. */
  timeoutMs: opt(PositiveInt, 8000),
  /**
   * The inclusion fee the buyer and the economic probes bid on a payment's transaction (stroops);
   * the resource fee is what simulation asks. The network's minimum of 100 times out when pubnet is busy.
   */
  inclusionFeeStroops: opt(PositiveInt, 10_000),
  /**
   * How often pending payments are checked on the ledger and unresolved settlements reconciled
   * (seconds; fractions allowed). A ledger closes about every 5 s.
   */
  pollIntervalSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 5)
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
export const PUBLIC_LEDGER_ENDPOINTS: Record<StellarNetwork, { readonly horizonUrl: string; readonly sorobanRpcUrl: string | null }> = {
  "stellar:testnet": { horizonUrl: "https://horizon-testnet.stellar.org", sorobanRpcUrl: "https://soroban-testnet.stellar.org" },
  "stellar:pubnet": { horizonUrl: "https://horizon.stellar.org", sorobanRpcUrl: null }
}

const defaultAsset: SupportedAsset = {
  network: "stellar:testnet",
  assetContract: TESTNET_USDC,
  symbol: "USDC",
  decimals: 7,
  minimumAmount: "1",
  maximumAmount: "10000000000"
}

/**
 * Economic probes: the service pays selected listed resources as a buyer would, with the
 * operator's probe key, so the transaction success rate rests on payments it made itself.
 */
export const EconomicProbesConfig = Schema.Struct({
  enabled: opt(Schema.Boolean, false),
  /** The probe payer's Stellar secret seed (created 0600 when missing; `sextant keys probe-address` shows its address). */
  payerKeyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/probe.key"),
  intervalSeconds: opt(PositiveInt, 3600),
  /** No single probe pays more than this. */
  maxPriceUsd: opt(NonNegativeNumber, 0.01),
  /** Spend per UTC day across all probes, kept in the store so a restart does not reset it. */
  budgetUsdPerDay: opt(NonNegativeNumber, 1),
  /**
   * Resource ids to probe; absent means every listed trusted resource (from the catalog file or
   * listed by an operator) with a payable option within maxPriceUsd.
   */
  resources: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))),
  /** Without `resources`, pay untrusted listed resources too (registered, imported, bazaar): anyone could add one. */
  includeUntrusted: opt(Schema.Boolean, false),
  /** Resources paying one payee (payTo) that one cycle pays at most. */
  maxPerPayee: opt(PositiveInt, 1),
  /** Resources of one provider that one cycle pays at most. */
  maxPerProvider: opt(PositiveInt, 3),
  /** Probes in the metric window a resource needs before it is paid: no money for an endpoint seen once. */
  minObservations: opt(PositiveInt, 3),
  /** The operator's policy: a resource is paid only when this policy ALLOWs one of its options. */
  policy: opt(AgentPolicy, {})
})
export type EconomicProbesConfig = typeof EconomicProbesConfig.Type

/**
 * The buyer side (`sextant buy`, `sextant keys buyer-new`, the MCP `buy_resource` tool): what runs on
 * the buyer's machine with the buyer's key. The network, asset and Soroban RPC are the top-level
 * `network`, `asset` and `ledger.sorobanRpcUrl`.
 */
export const BuyerConfig = Schema.Struct({
  /** The buyer's Stellar secret seed (created 0600 by `sextant keys buyer-new`); never sent anywhere. */
  keyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/buyer.key"),
  /** The Sextant service `sextant buy` routes through and asks for receipts. */
  service: opt(HttpUrl, "http://127.0.0.1:4020"),
  /** Sent as `Authorization: Bearer` to `service` only, for `POST /v1/receipts` when it has `apiKeys`. */
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /** The local spend ledger (SQLite); null means `<keyFile>.spend.db`, next to the key. */
  spendLedgerFile: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null),
  /** The rolling window the local spend ledger sums over. */
  windowSeconds: opt(PositiveInt, 86_400),
  /** What this key may sign for within the window, whatever any service says. */
  maxUsdPerWindow: opt(NonNegativeNumber, 1),
  /** What one MCP session (one `sextant mcp --buyer-key-file` process) may spend, on top of the window. */
  mcpSessionCapUsd: opt(NonNegativeNumber, 0.1),
  /** The unpaid request's timeout; the paid one waits up to 60 s for settlement. */
  timeoutMs: opt(PositiveInt, 10_000),
  /** A paid answer larger than this is not kept: the payment is reported as failed. */
  maxBodyBytes: opt(PositiveInt, 4 * 1024 * 1024),
  ...outboundGuardFields
})
export type BuyerConfig = typeof BuyerConfig.Type

/**
 * Traces: with `otlpEndpoint` set (a collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318),
 * every HTTP request and service step is exported as a span to `<otlpEndpoint>/v1/traces`.
 * Off (null) by default: nothing leaves the process unless the operator names a collector.
 */
export const TelemetryConfig = Schema.Struct({
  otlpEndpoint: opt(Schema.NullOr(HttpUrl), null),
  /** `service.name` of the exported resource, to tell instances apart in a shared collector. */
  serviceName: opt(Schema.String.pipe(Schema.minLength(1)), "sextant")
})
export type TelemetryConfig = typeof TelemetryConfig.Type

/** The config file; its field names are a contract with operators (docs/decisions.md): add, never rename. */
export const ConfigFile = Schema.Struct({
  host: opt(Schema.String, "127.0.0.1"),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4020),
  database: opt(Schema.String.pipe(Schema.minLength(1)), "./data/sextant.db"),
  network: opt(StellarNetwork, "stellar:testnet"),
  asset: opt(SupportedAsset, defaultAsset),
  facilitators: opt(Schema.Array(FacilitatorBackend), []),
  /** Seconds between `/supported` polls of every facilitator: also how soon one marked unhealthy is tried again. */
  facilitatorPollSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30),
  /**
   * A settle is answered within this many seconds, whatever its backends do: failover included
   * (after a backend's silence the ledger is read, then the next backend tried, only in this time);
   * what is still unknown at the deadline is answered 502 SETTLEMENT_INDETERMINATE.
   */
  settleDeadlineSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 120),
  /** Inline entries or a path to a JSON file of entries; null means the bundled demo catalog. */
  catalog: opt(Schema.NullOr(Schema.Union(Schema.Array(CatalogEntry), Schema.String)), null),
  probes: opt(ProbesConfig, Schema.decodeSync(ProbesConfig)({})),
  verification: opt(VerificationConfig, Schema.decodeSync(VerificationConfig)({})),
  ingestion: opt(IngestionConfig, Schema.decodeSync(IngestionConfig)({})),
  signer: opt(SignerConfig, { ed25519KeyFile: "./data/signer.key" }),
  budgets: opt(BudgetsConfig, Schema.decodeSync(BudgetsConfig)({})),
  limits: opt(LimitsConfig, Schema.decodeSync(LimitsConfig)({})),
  /**
   * On SIGTERM / SIGINT, how long requests and settles in flight may take to finish before the
   * process exits anyway (as a crash would leave them; recovery at the next start handles that).
   */
  shutdownGraceSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30),
  apiKeys: opt(Schema.Array(ApiKeyEntry), []),
  /**
   * Without `apiKeys` every endpoint is open, so `serve` listens only on loopback unless this says
   * the open service is meant to be reachable from elsewhere (as Redis's protected mode does).
   */
  openMode: opt(Schema.Boolean, false),
  catalogSources: opt(Schema.Array(CatalogSource), []),
  vertical: opt(VerticalConfig, Schema.decodeSync(VerticalConfig)({})),
  ledger: opt(LedgerConfig, Schema.decodeSync(LedgerConfig)({})),
  economicProbes: opt(EconomicProbesConfig, Schema.decodeSync(EconomicProbesConfig)({})),
  telemetry: opt(TelemetryConfig, Schema.decodeSync(TelemetryConfig)({})),
  /** "text": Effect's logfmt lines; "json": one JSON object per line, for log shippers. */
  logFormat: opt(Schema.Literal("text", "json"), "text"),
  demo: opt(DemoConfig, Schema.decodeSync(DemoConfig)({})),
  buyer: opt(BuyerConfig, Schema.decodeSync(BuyerConfig)({}))
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

/** One line naming the field, as an operator sees it when start-up stops. */
export class ConfigError {
  readonly _tag = "ConfigError"
  constructor(readonly field: string, readonly reason: string) {}
  get line() {
    return `config error: ${this.field}: ${this.reason}`
  }
}

const decodeOptions = { errors: "first", onExcessProperty: "error" } as const

const fieldPath = (path: ReadonlyArray<PropertyKey>) =>
  path.length === 0 ? "(root)" : path.map((p) => (typeof p === "number" ? `[${p}]` : String(p))).join(".").replace(/\.\[/g, "[")

/**
 * Fields whose values are secrets: a schema message would quote the value, so it is replaced.
 * RPC and Horizon URLs count: a provider's URL often carries its API key.
 */
const SECRET_FIELDS = new Set(["apiKey", "hmacSecret", "facilitatorApiKey", "database", "sorobanRpcUrl", "horizonUrl", "otlpEndpoint"])

export const firstIssue = (error: ParseResult.ParseError, prefix = ""): ConfigError => {
  const [issue] = ParseResult.ArrayFormatter.formatErrorSync(error)
  const path = issue?.path ?? []
  const field = fieldPath(path)
  const secret = path.some((p) => SECRET_FIELDS.has(String(p)))
  const message = secret ? "invalid value (not shown: it may be a secret)" : (issue?.message ?? "invalid")
  return new ConfigError(prefix ? (field === "(root)" ? prefix : `${prefix}.${field}`) : field, message)
}

/** A Postgres URL must parse; the message never repeats it, since it carries a password. */
const checkDatabase = (database: string): ConfigError | undefined => {
  if (!/^postgres(ql)?:/.test(database)) return undefined
  try {
    const url = new URL(database)
    if (url.hostname === "" || url.pathname.length <= 1) {
      return new ConfigError("database", "a postgres URL needs a host and a database name: postgres://user:password@host:5432/db")
    }
    return undefined
  } catch {
    return new ConfigError("database", "not a valid postgres URL (expected postgres://user:password@host:5432/db; value not shown)")
  }
}

export const decodeConfigFile = (input: unknown): Either.Either<ConfigFile, ConfigError> =>
  Schema.decodeUnknownEither(ConfigFile)(input, decodeOptions).pipe(Either.mapLeft((e) => firstIssue(e)))

export const decodeCatalog = (input: unknown, field: string): Either.Either<ReadonlyArray<CatalogEntry>, ConfigError> =>
  Schema.decodeUnknownEither(Schema.Array(CatalogEntry))(input, decodeOptions).pipe(
    Either.mapLeft((e) => firstIssue(e, field))
  )

/** Rules a schema cannot state alone: unique ids, and prices that agree at 7 decimals. */
export const checkConsistency = (config: Config): ConfigError | undefined => {
  const seen = new Set<string>()
  for (const [i, f] of config.facilitators.entries()) {
    if (seen.has(f.id)) return new ConfigError(`facilitators[${i}].id`, `duplicate facilitator id "${f.id}"`)
    seen.add(f.id)
  }
  const sourceIds = new Set<string>()
  for (const [i, source] of config.catalogSources.entries()) {
    if (sourceIds.has(source.id)) return new ConfigError(`catalogSources[${i}].id`, `duplicate catalog source id "${source.id}"`)
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
    return new ConfigError("asset.network", `asset is on ${config.asset.network} but the service runs on ${config.network}`)
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
        return new ConfigError(`${at}.amountUsd`, `${option.amountUsd} USD is not ${option.amount} base units at 7 decimals`)
      }
      if (option.scheme === "upto") {
        if (option.maxAmount === undefined || option.maxAmountUsd === undefined) {
          return new ConfigError(`${at}.maxAmount`, "an upto option needs maxAmount and maxAmountUsd")
        }
        if (!usdMatchesBaseUnits(option.maxAmountUsd, option.maxAmount, decimals)) {
          return new ConfigError(`${at}.maxAmountUsd`, `${option.maxAmountUsd} USD is not ${option.maxAmount} base units at 7 decimals`)
        }
        if (!ceilingCoversAmount(option)) {
          return new ConfigError(`${at}.maxAmount`, "the ceiling is below the amount")
        }
      }
    }
  }
  return undefined
}

export const readText = (path: string, field: string): Either.Either<string, ConfigError> => {
  try {
    return Either.right(readFileSync(path, "utf8"))
  } catch (e) {
    return Either.left(new ConfigError(field, `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? "error"}`))
  }
}

export const parseJson = (text: string, path: string, field: string): Either.Either<unknown, ConfigError> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (e) {
    return Either.left(new ConfigError(field, `${path} is not valid JSON: ${(e as Error).message}`))
  }
}

const readJson = (path: string, field: string): Either.Either<unknown, ConfigError> =>
  Either.flatMap(readText(path, field), (text) => parseJson(text, path, field))

const parsePort = (value: string, field: string): Either.Either<number, ConfigError> => {
  const port = Number(value)
  return Number.isInteger(port) && port >= 0 && port <= 65535 && /^\d+$/.test(value)
    ? Either.right(port)
    : Either.left(new ConfigError(field, `expected a port number 0-65535, got "${value}"`))
}

const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", ""])
/** A host to connect to for a server listening on `host`: a wildcard bind is reached on loopback. */
export const reachableHost = (host: string) => (WILDCARD_HOSTS.has(host) ? "127.0.0.1" : host)

/** The bundled demo catalog lists the vertical and the demo providers at their defaults; they are moved to where they really run. */
const DEMO_VERTICAL_PREFIX = "http://127.0.0.1:4021/stellar-intel/"
const DEFAULT_DEMO = Schema.decodeSync(DemoConfig)({})

const verticalOrigin = (vertical: VerticalConfig) =>
  vertical.publicUrl ?? `http://${reachableHost(vertical.host)}:${vertical.port}`

/** The catalog id of the demo provider with this behaviour; its endpoints live under `/<id>/v1/rwa/`. */
export const demoProviderId = (behaviour: DemoBehaviour) => `demo-${behaviour}`

export const demoOrigin = (demo: Pick<DemoConfig, "host" | "ports">, behaviour: DemoBehaviour) =>
  `http://${reachableHost(demo.host)}:${demo.ports[behaviour]}`

const moved = (entry: CatalogEntry, url: string, origin: string): CatalogEntry => ({
  ...entry,
  resource: { ...entry.resource, url },
  provider: { ...entry.provider, url: origin }
})

/**
 * The bundled demo catalog placed where this config runs the vertical and the demo providers. The
 * demo providers' entries are left out when they do not run, so nothing lists a port nobody serves.
 */
const placeDemoCatalog = (
  entries: ReadonlyArray<CatalogEntry>,
  vertical: VerticalConfig,
  demo: DemoSettings
): ReadonlyArray<CatalogEntry> =>
  entries.flatMap((entry) => {
    const url = entry.resource.url
    if (url.startsWith(DEMO_VERTICAL_PREFIX)) {
      const origin = verticalOrigin(vertical)
      return [moved(entry, `${origin}/${vertical.name}/${url.slice(DEMO_VERTICAL_PREFIX.length)}`, origin)]
    }
    const behaviour = DEMO_BEHAVIOURS.find((b) => url.startsWith(`${demoOrigin(DEFAULT_DEMO, b)}/`))
    if (behaviour === undefined) return [entry]
    if (!demo.enabled) return []
    const origin = demoOrigin(demo, behaviour)
    return [moved(entry, `${origin}${url.slice(demoOrigin(DEFAULT_DEMO, behaviour).length)}`, origin)]
  })

/** The bundled demo catalog as this config places it: the default catalog, and the demo providers' price list. */
export const bundledCatalog = (
  placement: { readonly vertical: VerticalConfig; readonly demo: DemoSettings }
): Either.Either<ReadonlyArray<CatalogEntry>, ConfigError> =>
  Either.map(decodeCatalog(demoCatalog, "catalog (bundled demo)"), (entries) =>
    placeDemoCatalog(entries, placement.vertical, placement.demo)
  )

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
const insecureLedgerUrl = (urls: ReadonlyArray<readonly [string, string | null]>): ConfigError | undefined => {
  const found = urls.find(([, url]) => url !== null && plainHttpOffLoopback(url))
  return found && new ConfigError(found[0], "a ledger endpoint off loopback must use https: its answers settle and confirm payments")
}

/** The `ledger` block with each null endpoint replaced by the network's public one. */
const resolveLedger = (ledger: LedgerConfig, network: StellarNetwork): Either.Either<LedgerSettings, ConfigError> => {
  const defaults = PUBLIC_LEDGER_ENDPOINTS[network]
  const sorobanRpcUrl = ledger.sorobanRpcUrl ?? defaults.sorobanRpcUrl
  if (sorobanRpcUrl === null) {
    return Either.left(
      new ConfigError("ledger.sorobanRpcUrl", `${network} has no public Soroban RPC endpoint to default to: set the URL of your RPC provider`)
    )
  }
  const insecure = insecureLedgerUrl([["ledger.sorobanRpcUrl", ledger.sorobanRpcUrl], ["ledger.horizonUrl", ledger.horizonUrl]])
  if (insecure) return Either.left(insecure)
  return Either.right({ ...ledger, sorobanRpcUrl, horizonUrl: ledger.horizonUrl ?? defaults.horizonUrl })
}

/** The endpoints the vertical reads: its own when set, else the ledger's. */
export const verticalEndpoints = (config: Pick<Config, "vertical" | "ledger">) => ({
  horizonUrl: config.vertical.horizonUrl ?? config.ledger.horizonUrl,
  sorobanRpcUrl: config.vertical.sorobanRpcUrl ?? config.ledger.sorobanRpcUrl
})

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
      file.catalog === null ? yield* bundledCatalog({ vertical: file.vertical, demo }) : typeof file.catalog === "string" ? [] : file.catalog
    const catalogFile = typeof file.catalog === "string" ? resolve(baseDir, file.catalog) : null
    // The vertical and demo providers this config runs are its own: their origins are always probed
    // (and may be bought from), even on loopback.
    const ownVertical = file.vertical.enabled && file.vertical.port !== 0 ? [verticalOrigin(file.vertical)] : []
    const ownDemo = demo.enabled ? DEMO_BEHAVIOURS.map((b) => demoOrigin(demo, b)) : []
    const trusting = (origins: ReadonlyArray<string>) => [...new Set([...origins, ...ownVertical, ...ownDemo])]
    const ledger = yield* resolveLedger(file.ledger, file.network)
    const insecureVertical = insecureLedgerUrl([["vertical.sorobanRpcUrl", file.vertical.sorobanRpcUrl], ["vertical.horizonUrl", file.vertical.horizonUrl]])
    if (insecureVertical) return yield* Either.left(insecureVertical)
    const config: Config = {
      ...file,
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
