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
  id: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "The backend's name in logs, metrics and `/x402/facilitators`; unique." }),
  url: Schema.propertySignature(HttpUrl).annotations({ description: "The backend's base URL; `/supported`, `/verify` and `/settle` are appended." }),
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "Sent as `Authorization: Bearer` to this backend only; a redirect from it is an error answer, never followed." })
})
export type FacilitatorBackend = typeof FacilitatorBackend.Type

/**
 * The embedded Stellar `exact` facilitator (`src/facilitator/`): this service's own fee account
 * settles payments through the configured `ledger` endpoints, as one more entry of the pool.
 */
export const EmbeddedFacilitator = Schema.Struct({
  id: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "The backend's name in logs, metrics and `/x402/facilitators`; unique." }),
  type: Schema.propertySignature(Schema.Literal("stellar")).annotations({ description: "`stellar`: settle in this process with the fee account below (docs/facilitator.md)." }),
  network: Schema.propertySignature(StellarNetwork).annotations({ description: "The network it settles on; must be the service's `network` (its ledger is `ledger`)." }),
  feeAccountKeyFile: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "The fee account's Stellar secret seed, created with mode 0600 when missing; `sextant keys facilitator-new` prints the address to fund." }),
  channels: opt(Schema.Int.pipe(Schema.between(0, 256)), 0).annotations({ description: "Channel accounts (sequence sources derived from the fee key, each leased to one settle at a time, wrapped in a fee bump paid by the fee account); 0 makes the fee account the only source, about one settle per ledger. `sextant facilitator channels` creates and funds them." }),
  minFeeBalanceXlm: opt(NonNegativeNumber, 5).annotations({ description: "Below this XLM balance of the fee account the backend is unhealthy (failover moves on)." }),
  balanceCheckSeconds: opt(Schema.NullOr(Schema.Number.pipe(Schema.positive(), Schema.finite())), null).annotations({ description: "Read the fee account's balance on this schedule too; `null` reads it only after settles (no ledger traffic of its own)." }),
  pollIntervalMs: opt(PositiveInt, 500).annotations({ description: "How often a submitted settle asks `getTransaction` until `SUCCESS`, `FAILED` or the settle deadline." })
})
export type EmbeddedFacilitator = typeof EmbeddedFacilitator.Type

/** One entry of `facilitators`: an HTTP backend, or the embedded Stellar one. */
export const FacilitatorEntry = Schema.Union(EmbeddedFacilitator, FacilitatorBackend)
export type FacilitatorEntry = typeof FacilitatorEntry.Type

export const isEmbedded = (entry: FacilitatorEntry): entry is EmbeddedFacilitator => "type" in entry && entry.type === "stellar"

/**
 * The bundled default: one embedded backend on the service's network, its key created on first
 * start. Pubnet's key file is another file: mainnet uses a separate signing account.
 */
export const defaultEmbedded = (network: StellarNetwork): EmbeddedFacilitator =>
  network === "stellar:testnet" ? DEFAULT_EMBEDDED : { ...DEFAULT_EMBEDDED, id: "embedded-pubnet", network, feeAccountKeyFile: "./data/facilitator-pubnet.key" }

export const DEFAULT_EMBEDDED: EmbeddedFacilitator = {
  id: "embedded-testnet",
  type: "stellar",
  network: "stellar:testnet",
  feeAccountKeyFile: "./data/facilitator.key",
  channels: 0,
  minFeeBalanceXlm: 5,
  balanceCheckSeconds: null,
  pollIntervalMs: 500
}

/**
 * Another discovery service to import from: a Bazaar-shaped `GET <url>/discovery/resources`
 * (or `url` itself when it already ends so), pulled every `intervalSeconds`. Only items payable on
 * this deployment's network and asset are kept; `networks`, when given, narrows that further.
 */
export const CatalogSource = Schema.Struct({
  id: Schema.propertySignature(Schema.String.pipe(
    Schema.pattern(/^[a-z0-9][a-z0-9._-]{0,63}$/, { message: () => "expected a lowercase id such as \"cdp-bazaar\"" })
  )).annotations({ description: "Lowercase `[a-z0-9._-]`, unique; the imported resources' source is `import:<id>`." }),
  url: Schema.propertySignature(Schema.String.pipe(Schema.pattern(/^https?:\/\/\S+$/, { message: () => "expected an http(s) URL" }))).annotations({ description: "The service's base URL (`/discovery/resources` is appended) or that endpoint itself." }),
  intervalSeconds: opt(PositiveInt, 3600).annotations({ description: "Pause between the end of one pull and the start of the next." }),
  networks: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))).annotations({ description: "Narrows what is kept; only this deployment's `network` and `asset` can be kept at all." })
})
export type CatalogSource = typeof CatalogSource.Type

/**
 * The outbound guard's fields (`verification/outboundGuard.ts`), shared by probes and the buyer:
 * both send requests to URLs a catalog named, which must not reach private networks unless trusted.
 */
const outboundGuardFields = {
  allowPrivateTargets: opt(Schema.Boolean, false).annotations({ description: "Allow requests to loopback, private, link-local and metadata addresses." }),
  trustedOrigins: opt(Schema.Array(Schema.String), []).annotations({ description: "Origins reached even though private. The origins this process itself serves are always added: the vertical's when `vertical.enabled`, the demo providers' when `demo.enabled`, wherever they listen (so the defaults trust `http://127.0.0.1:4021`-`4025`, and nothing once both are off)." })
}

export const ProbesConfig = Schema.Struct({
  intervalSeconds: opt(PositiveInt, 60).annotations({ description: "Each resource is probed once per interval, at its own slot in it." }),
  timeoutMs: opt(PositiveInt, 5000).annotations({ description: "Bound on each probe." }),
  concurrency: opt(PositiveInt, 8).annotations({ description: "Probes in flight at once for trusted entries (catalog file, operator-listed); untrusted ones have their own lane (`ingestion.concurrency`)." }),
  leaseSeconds: opt(PositiveInt, 60).annotations({ description: "How long a claim on a due resource holds; an instance that dies gives its claims back after this. Must exceed `timeoutMs`." }),
  // Retired, still accepted: config field names are a contract (docs/decisions.md, Config field names).
  jitter: Schema.optional(Ratio).annotations({ description: "Accepted and ignored, so older config files still load: per-resource slots spread probes over the interval." }),
  ...outboundGuardFields,
  retentionDays: opt(PositiveInt, 7).annotations({ description: "Hourly rollups of probes older than this are pruned; also the longest span `GET /v1/resources/{id}/history` reads." }),
  rawRetentionHours: opt(PositiveInt, 2).annotations({ description: "Raw observations older than this are pruned (history beyond is the hourly rollups)." }),
  maxBodyBytes: opt(PositiveInt, 65536).annotations({ description: "Cap on a probed response body." }),
  priceTolerance: opt(NonNegativeNumber, 0.05).annotations({ description: "Share above the advertised price a challenge may ask before the resource is quarantined." }),
  validationsPerInterval: opt(PositiveInt, 1).annotations({ description: "Observations callers' `/v1/validate` of a catalog resource may add per probe interval beside the schedule's one. Every validation answered 200 is recorded; one beyond this is 429 `RATE_LIMITED` with `Retry-After` (when the oldest observation counted leaves the interval). The default, 1, keeps callers from outweighing the schedule." })
})
export type ProbesConfig = typeof ProbesConfig.Type

export const VerificationConfig = Schema.Struct({
  windowHours: opt(PositiveInt, 24).annotations({ description: "The metric window, in hours." }),
  confidenceSampleScale: opt(PositiveInt, 12).annotations({ description: "Probes in the window at which the sample-size term of `confidence` reaches 1 - 1/e." }),
  confidenceHalfLifeSeconds: opt(PositiveInt, 3600).annotations({ description: "Seconds after the newest probe at which the freshness term of `confidence` has halved." }),
  maxEvidenceAgeSeconds: opt(PositiveInt, 86400).annotations({ description: "Evidence older than this is `VERIFICATION_TOO_OLD` (a policy may tighten it)." }),
  degradedBelow: opt(Ratio, 0.8).annotations({ description: "Healthy share of the probes in the window below which a resource is `DEGRADED`." }),
  offlineAfterFailures: opt(PositiveInt, 3).annotations({ description: "Consecutive connect failures or timeouts that make a resource `OFFLINE`." }),
  quarantineReleaseChallenges: opt(Schema.Int.pipe(Schema.greaterThanOrEqualTo(2)), 3).annotations({ description: "An automatic quarantine (a challenge contradicted the catalog) lifts only after this many challenges in a row agree with the catalog, the first and the last at least `probes.intervalSeconds` apart (2 or more); probes that get no challenge neither count nor break the run. Operator quarantines are lifted by an operator only." }),
  continuousMinProbes: opt(PositiveInt, 24).annotations({ description: "Healthy probes, spread over the window, needed for level 4." }),
  continuousMinAvailability: opt(Ratio, 0.95).annotations({ description: "Availability needed for level 4." }),
  minDistinctPayers: opt(PositiveInt, 2).annotations({ description: "Distinct payers whose confirmed settles and receipts a resource needs before they count, for level 3 and for `transactionSuccessRate`; the operator's own economic probes count alone (docs/trust.md)." }),
  delistAfterHours: opt(PositiveInt, 72).annotations({ description: "A listed resource whose probes have all been unhealthy this long leaves discovery, search and routes (kept with its history) until a healthy probe lists it again." }),
  unlistedRetentionHours: opt(PositiveInt, 168).annotations({ description: "An unlisted resource `/v1/validate` created is deleted, with its observations, once nobody has validated it for this long (checked after each probe cycle); one an operator quarantined stays." })
})
export type VerificationConfig = typeof VerificationConfig.Type

/**
 * What strangers may add to the catalog and how much of the probe workload it may take
 * (docs/trust.md). Counted over untrusted entries (registration, import, bazaar; not the catalog
 * file's or what an operator listed), in the store, so instances sharing a database share them.
 */
export const IngestionConfig = Schema.Struct({
  maxPerSource: opt(PositiveInt, 10_000).annotations({ description: "Untrusted entries (not the catalog file's, not operator-listed; docs/trust.md) one source may hold: `registration`, `bazaar`, each `import:<id>`." }),
  maxPerOrigin: opt(PositiveInt, 100).annotations({ description: "Untrusted entries at one origin (scheme, host, port), whoever added them." }),
  maxPerPrincipal: opt(PositiveInt, 500).annotations({ description: "Untrusted entries one principal added by registration (the API key's principal, `anonymous` in open mode) or by the bazaar extension (the payer)." }),
  maxPerPayee: opt(PositiveInt, 100).annotations({ description: "Untrusted entries naming one `payTo`." }),
  retireAfterHours: opt(PositiveInt, 168).annotations({ description: "An untrusted entry unhealthy this long is deleted with its observations (after each probe cycle); one an operator quarantined stays." }),
  maxBackoffIntervals: opt(PositiveInt, 64).annotations({ description: "An unhealthy untrusted entry is probed every 2^k intervals (k: whole intervals it has been unhealthy), at most this many." }),
  concurrency: opt(PositiveInt, 4).annotations({ description: "Probes in flight for untrusted entries, in their own lane beside the trusted one (`probes.concurrency`)." }),
  untrustedPayeeStanding: opt(Schema.Boolean, false).annotations({ description: "Whether untrusted entries' probe evidence can give a payee its settle standing. Off: a settle passes the payee check only through a trusted entry paying it (the catalog file's, or one an operator listed), so a stranger's registration of a URL naming a payee never opens settles to it; refusals (quarantine, denied providers) still look at every entry (docs/trust.md)." })
})
export type IngestionConfig = typeof IngestionConfig.Type

export const BudgetsConfig = Schema.Struct({
  windowSeconds: opt(PositiveInt, 3600).annotations({ description: "Rolling window for the fee and spend budgets." }),
  feeCeilingStroops: opt(PositiveInt, 1_000_000).annotations({ description: "Sponsored fee reserved per settlement, charged at this ceiling whatever the fee really is." }),
  globalFeeStroops: opt(PositiveInt, 100_000_000).annotations({ description: "Sponsored fees across all principals per window; over it a settle is 429 `FEE_BUDGET_EXHAUSTED`." }),
  perPrincipalFeeStroops: opt(PositiveInt, 10_000_000).annotations({ description: "Sponsored fees per principal per window." }),
  spendWindowUsd: opt(NonNegativeNumber, 10).annotations({ description: "Worst-case spend per principal per window; over it a settle is 403 `WINDOW_LIMIT_EXCEEDED`." })
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
  validate: opt(RateLimit, { requests: 60, windowSeconds: 60 }).annotations({ description: "At most `requests` calls of `POST /v1/validate` per principal per `windowSeconds` (each sends traffic to a third party); `null` switches the limit off. Over the limit: 429 `RATE_LIMITED` with `Retry-After`." }),
  register: opt(RateLimit, { requests: 10, windowSeconds: 60 }).annotations({ description: "The same for `POST /v1/resources/register` (each call probes at most 20 routes)." }),
  receipts: opt(RateLimit, { requests: 300, windowSeconds: 60 }).annotations({ description: "The same for `POST /v1/receipts` and `POST /v1/preflight/outcomes` together (each reads the ledger)." }),
  verify: opt(RateLimit, { requests: 1200, windowSeconds: 60 }).annotations({ description: "The same for `POST /x402/verify`." }),
  settle: opt(RateLimit, { requests: 1200, windowSeconds: 60 }).annotations({ description: "The same for `POST /x402/settle`." }),
  search: opt(RateLimit, { requests: 120, windowSeconds: 60 }).annotations({ description: "The same for `POST /v1/search` and `GET /x402/discovery/search` together (the MCP tools `search_resources` and `search_discovery_resources` call them): each search reads the catalog's index." }),
  clientAddressHeader: opt(Schema.NullOr(Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/, { message: () => "expected a lowercase header name" }))), null).annotations({ description: "Behind a reverse proxy, the header it writes the client's address into; without it every client counts as the proxy. The entry `trustedProxyHops` from the right is used: a proxy appends the address it saw on the right, and what a client sends itself stays on the left. Set it only when your proxy always writes the header.", examples: ["x-forwarded-for"] }),
  trustedProxyHops: opt(PositiveInt, 1).annotations({ description: "How many proxies you run in front of the service, each appending to `clientAddressHeader`; a header with fewer entries gives its left-most one." })
})
export type LimitsConfig = typeof LimitsConfig.Type

export const SignerConfig = Schema.Union(
  Schema.Struct({ ed25519KeyFile: Schema.String.pipe(Schema.minLength(1)) }),
  Schema.Struct({ hmacSecret: Schema.String.pipe(Schema.minLength(16)) })
)
export type SignerConfig = typeof SignerConfig.Type

export const ApiKeyEntry = Schema.Struct({
  principal: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "The name the key acts as: budgets, idempotency, settlements and curation are keyed on it." }),
  sha256: Schema.propertySignature(Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected lowercase hex SHA-256" }))).annotations({ description: "The key's SHA-256, lowercase hex (`sextant keys hash <api-key>`); keys themselves are never configured." }),
  policy: Schema.optional(AgentPolicy).annotations({ description: "An AgentPolicy every settle by this principal must pass together with the request's `servicePolicy`." }),
  role: Schema.optional(Schema.Literal("operator", "buyer")).annotations({ description: "`operator` may curate the catalog (quarantine, list, unlist, delete); `buyer` (the default when absent) may not." })
})
export type ApiKeyEntry = typeof ApiKeyEntry.Type

export const VerticalConfig = Schema.Struct({
  enabled: opt(Schema.Boolean, true).annotations({ description: "Start the reference vertical beside the service on `serve`." }),
  host: opt(Schema.String, "127.0.0.1").annotations({ description: "Where the vertical listens." }),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4021).annotations({ description: "The vertical's port." }),
  name: opt(Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/)), "stellar-intel").annotations({ description: "Path segment: endpoints live under `/<name>/v1/rwa/`." }),
  payTo: opt(StellarAddress, "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464").annotations({ description: "Recipient of its payments." }),
  facilitatorUrl: opt(Schema.NullOr(Schema.String), null).annotations({ description: "Its facilitator; `null` is this service's own `/x402`." }),
  horizonUrl: opt(Schema.NullOr(Schema.String), null).annotations({ description: "Horizon it reads; `null` is `ledger.horizonUrl`." }),
  sorobanRpcUrl: opt(Schema.NullOr(Schema.String), null).annotations({ description: "Soroban RPC it reads; `null` is `ledger.sorobanRpcUrl`." }),
  prices: opt(
    Schema.Struct({
      inspect: BaseUnits,
      changes: BaseUnits,
      compliance: BaseUnits,
      eligibility: BaseUnits
    }),
    { inspect: "10000", changes: "20000", compliance: "20000", eligibility: "5000" }
  ).annotations({ description: "Per-endpoint price in base units." }),
  publicUrl: opt(
    Schema.NullOr(
      Schema.String.pipe(
        Schema.pattern(/^https?:\/\/[^/\s]+$/, { message: () => "expected an origin such as https://intel.example.com" })
      )
    ),
    null
  ).annotations({ description: "Origin buyers reach it at (behind a proxy); `null` is `http://<host>:<port>`.", examples: ["https://intel.example.com"] }),
  facilitatorApiKey: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({ description: "Sent as `Authorization: Bearer` to its facilitator (needed when this service has `apiKeys`)." }),
  facilitatorTimeoutMs: opt(PositiveInt, 60000).annotations({ description: "Bound on its verify and settle calls (settle waits for the ledger, so it is generous)." }),
  upstreamTimeoutMs: opt(PositiveInt, 8000).annotations({ description: "Bound on each Horizon, Soroban RPC and `stellar.toml` call." }),
  allowPrivateHomeDomains: opt(Schema.Boolean, false).annotations({ description: "Fetch `stellar.toml` from loopback or private home domains (tests only)." }),
  largeTransferShare: opt(Ratio, 0.01).annotations({ description: "A mint or burn is \"large\" from this share of the supply." }),
  offerKeyFile: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({ description: "The Ed25519 key (PKCS#8 PEM) the vertical signs its offers and receipts with (`offer-receipt`), created with mode 0600 on first start and kept across restarts, so its `did:jwk` signer is a lasting identity; never logged. `null` is `offer-<name>.key` beside the receipt signer's key file (`./data` with an HMAC signer)." })
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
  enabled: opt(Schema.NullOr(Schema.Boolean), null).annotations({ description: "Start the demo providers beside the vertical; `null` means \"when `catalog` is not configured\". False also leaves their entries out of the bundled catalog." }),
  host: opt(Schema.String, "127.0.0.1").annotations({ description: "Where they listen." }),
  ports: opt(
    Schema.Struct({
      fast: opt(FixedPort, 4022),
      slow: opt(FixedPort, 4023),
      flaky: opt(FixedPort, 4024),
      raiser: opt(FixedPort, 4025)
    }),
    { fast: 4022, slow: 4023, flaky: 4024, raiser: 4025 }
  ).annotations({ description: "One port per provider (1-65535: the catalog's URLs name it); each must differ from the others, `port` and `vertical.port`." }),
  slowDelayMs: opt(Schema.Int.pipe(Schema.nonNegative()), 400).annotations({ description: "How long `demo-slow` waits before each answer." }),
  flakyFailureShare: opt(Ratio, 0.5).annotations({ description: "Share of `demo-flaky`'s requests answered 500, spread evenly (with 0.5 every second one)." }),
  priceRaiseAfterSeconds: opt(NonNegativeNumber, 60).annotations({ description: "Seconds after start from which `demo-raiser`'s challenges ask more than its catalog entries advertise." }),
  priceRaiseFactor: opt(Schema.Number.pipe(Schema.finite(), Schema.greaterThan(1)), 2).annotations({ description: "What they then ask, as a multiple of the advertised price (above 1; quarantined when above 1 + `probes.priceTolerance`)." }),
  offerKeyFolder: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({ description: "Where each demo provider keeps the Ed25519 key it signs offers and receipts with: `offer-demo-<behaviour>.key`, created with mode 0600 on first start and kept across restarts; never logged. `null` is the folder of the receipt signer's key file (`./data` with an HMAC signer)." })
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
  sorobanRpcUrl: opt(Schema.NullOr(HttpUrl), null).annotations({ description: "Soroban RPC every ledger read goes to first: transactions in its retention window, nonce entries, `transfer` events, the latest ledger. `null` is the network's public RPC (`https://soroban-testnet.stellar.org` on testnet); `stellar:pubnet` has none, so there it must be set. Off loopback it must be `https` (as must `ledger.horizonUrl`, `vertical.horizonUrl` and `vertical.sorobanRpcUrl`). Not quoted in config errors." }),
  horizonUrl: opt(Schema.NullOr(HttpUrl), null).annotations({ description: "Horizon, asked for a transaction RPC no longer holds. `null` is `https://horizon-testnet.stellar.org` on testnet, `https://horizon.stellar.org` on pubnet. A Horizon that skips result meta (SDF's, since Protocol 22) confirms no transfer older than RPC's retention." }),
  confirmTimeoutSeconds: opt(PositiveInt, 120).annotations({ description: "How long a claimed transaction may take to appear on the ledger before its evidence is rejected." }),
  timeoutMs: opt(PositiveInt, 8000).annotations({ description: "Bound on each RPC or Horizon call; a call that runs over counts as the ledger being unavailable." }),
  inclusionFeeStroops: opt(PositiveInt, 10_000).annotations({ description: "The inclusion fee the buyer and the economic probes bid on a payment's transaction; the resource fee is what simulation asks (the network's minimum of 100 times out when pubnet is busy)." }),
  pollIntervalSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 5).annotations({ description: "How often `serve` checks pending payments on the ledger and reconciles indeterminate settlements (fractions allowed; a ledger closes about every 5 s)." })
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
  enabled: opt(Schema.Boolean, false).annotations({ description: "Pay listed resources as a buyer would, so the transaction success rate rests on payments this service made (docs/verification.md)." }),
  payerKeyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/probe.key").annotations({ description: "The probe payer's Stellar secret seed, created with mode 0600 when missing; `sextant keys probe-address` prints its address to fund." }),
  intervalSeconds: opt(PositiveInt, 3600).annotations({ description: "Time between economic probe cycles." }),
  maxPriceUsd: opt(NonNegativeNumber, 0.01).annotations({ description: "No single probe pays more." }),
  budgetUsdPerDay: opt(NonNegativeNumber, 1).annotations({ description: "Spend per UTC day across all probes, kept in the store (a restart does not reset it)." }),
  resources: Schema.optional(Schema.Array(Schema.String.pipe(Schema.minLength(1)))).annotations({ description: "Resource ids to probe; absent means every listed trusted resource (catalog file or operator-listed) with a payable option within `maxPriceUsd`." }),
  includeUntrusted: opt(Schema.Boolean, false).annotations({ description: "Without `resources`, pay untrusted listed resources too (registered, imported, bazaar: anyone could add one priced at the cap with their own `payTo`)." }),
  maxPerPayee: opt(PositiveInt, 1).annotations({ description: "Resources paying one `payTo` that one cycle pays at most." }),
  maxPerProvider: opt(PositiveInt, 3).annotations({ description: "Resources of one provider that one cycle pays at most." }),
  minObservations: opt(PositiveInt, 3).annotations({ description: "Probes in the metric window a resource needs before it is paid." }),
  policy: opt(AgentPolicy, {}).annotations({ description: "The operator's AgentPolicy: a resource is paid only when it ALLOWs one of its `exact` options (with `maxPriceUsd` as the price cap), so a never-probed or stale resource is not paid." })
})
export type EconomicProbesConfig = typeof EconomicProbesConfig.Type

/**
 * The buyer side (`sextant buy`, `sextant keys buyer-new`, the MCP `buy_resource` tool): what runs on
 * the buyer's machine with the buyer's key. The network, asset and Soroban RPC are the top-level
 * `network`, `asset` and `ledger.sorobanRpcUrl`.
 */
export const BuyerConfig = Schema.Struct({
  keyFile: opt(Schema.String.pipe(Schema.minLength(1)), "./data/buyer.key").annotations({ description: "The buyer's Stellar secret seed (`sextant keys buyer-new` creates it, mode 0600); read on this machine only, never sent." }),
  service: opt(HttpUrl, "http://127.0.0.1:4020").annotations({ description: "The Sextant service `sextant buy` routes through and asks for receipts (`--service` overrides)." }),
  apiKey: Schema.optional(Schema.String.pipe(Schema.minLength(1))).annotations({ description: "Sent as `Authorization: Bearer` to `buyer.service` only (for `POST /v1/receipts` when it has `apiKeys`); `SEXTANT_API_KEY` also works, never the command line." }),
  spendLedgerFile: opt(Schema.NullOr(Schema.String.pipe(Schema.minLength(1))), null).annotations({ description: "The local spend ledger (SQLite), one window per key; `null` is `<keyFile>.spend.db`." }),
  windowSeconds: opt(PositiveInt, 86_400).annotations({ description: "The rolling window the spend ledger sums over." }),
  maxUsdPerWindow: opt(NonNegativeNumber, 1).annotations({ description: "What the key may sign for within the window, whatever any service says." }),
  mcpSessionCapUsd: opt(NonNegativeNumber, 0.1).annotations({ description: "What one MCP buyer session (one `sextant mcp --buyer-key-file` process) may spend, on top of the window (`--session-cap-usd` overrides)." }),
  timeoutMs: opt(PositiveInt, 10_000).annotations({ description: "The unpaid request's timeout (the paid one waits up to 60 s for settlement)." }),
  maxBodyBytes: opt(PositiveInt, 4 * 1024 * 1024).annotations({ description: "A paid answer larger than this is not kept: the purchase ends `PAID_BUT_FAILED`." }),
  ...outboundGuardFields
})
export type BuyerConfig = typeof BuyerConfig.Type

/**
 * Traces: with `otlpEndpoint` set (a collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318),
 * every HTTP request and service step is exported as a span to `<otlpEndpoint>/v1/traces`.
 * Off (null) by default: nothing leaves the process unless the operator names a collector.
 */
export const TelemetryConfig = Schema.Struct({
  otlpEndpoint: opt(Schema.NullOr(HttpUrl), null).annotations({ description: "An OpenTelemetry collector's OTLP/HTTP base URL: spans of every HTTP request and service step go to `<otlpEndpoint>/v1/traces` (OTLP JSON, every second); `null` makes no span at all. Not quoted in config errors (it may carry a token).", examples: ["http://127.0.0.1:4318"] }),
  serviceName: opt(Schema.String.pipe(Schema.minLength(1)), "sextant").annotations({ description: "The exported resource's `service.name`, to tell instances apart in a shared collector." })
})
export type TelemetryConfig = typeof TelemetryConfig.Type

/**
 * The config file; its field names are a contract with operators (docs/decisions.md, Config field
 * names): add, never rename. Every field's `description` is its entry in docs/reference/configuration.md
 * (`npm run docs:config`).
 */
export const ConfigFile = Schema.Struct({
  host: opt(Schema.String, "127.0.0.1").annotations({ description: "Listen address (`HOST` overrides). Without `apiKeys` only a loopback address is accepted unless `openMode`." }),
  port: opt(Schema.Int.pipe(Schema.between(0, 65535)), 4020).annotations({ description: "Listen port (`PORT` overrides)." }),
  database: opt(Schema.String.pipe(Schema.minLength(1)), "./data/sextant.db").annotations({ description: "SQLite file (parent folder created), `\":memory:\"`, or a `postgres://` URL (`DATABASE_URL` overrides). Not quoted in config errors.", examples: ["./data/sextant.db", "postgres://user:password@127.0.0.1:5432/sextant"] }),
  network: opt(StellarNetwork, "stellar:testnet").annotations({ description: "`stellar:testnet` or `stellar:pubnet`." }),
  asset: opt(SupportedAsset, defaultAsset).annotations({ description: "The SupportedAsset; amounts are in its base units (7 decimals: `\"10000\"` is $0.001)." }),
  facilitators: opt(Schema.Array(FacilitatorEntry), [DEFAULT_EMBEDDED]).annotations({ description: "The facilitator backends, tried in this order: `{id, url, apiKey?}` for an HTTP facilitator (`apiKey` is sent as `Authorization: Bearer` to that backend only, and a redirect from it is an error answer, never followed), or `{id, type: \"stellar\", network, feeAccountKeyFile, channels?, minFeeBalanceXlm?, balanceCheckSeconds?, pollIntervalMs?}` for the embedded facilitator (docs/facilitator.md). The default is one embedded backend on testnet with its key in `./data/facilitator.key`; it reads the ledger only when a payment is verified or settled. `[]` configures none.", examples: [[{ id: "primary", url: "https://facilitator.example.com" }], [{ ...DEFAULT_EMBEDDED, id: "own", channels: 8 }]] }),
  facilitatorPollSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30).annotations({ description: "Seconds between `/supported` polls of every facilitator; also how soon one marked unhealthy is tried again." }),
  settleDeadlineSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 120).annotations({ description: "A settle is answered within this, whatever its backends do: failover (a ledger read, then the next backend) happens only in this time, and what is still unknown at the deadline is 502 `SETTLEMENT_INDETERMINATE`. Each backend gets an even share of the time left, less a ledger read each." }),
  catalog: opt(Schema.NullOr(Schema.Union(Schema.Array(CatalogEntry), Schema.String)), null).annotations({ description: "An array of ResourceRecord, or a path to a JSON file of them (relative to the config file; decoded when the store is open and only when its content differs from what the store loaded last, with the same one-line error and exit 2). `null` is the bundled demo catalog (`src/store/demo-catalog.json`), placed where `vertical` and `demo` listen, without the demo providers when `demo.enabled` is false. `status` and `verificationLevel` may be omitted and are ignored: they are earned. `amountUsd` must equal `amount` at 7 decimals. A resource of type `mcp` has its MCP server's Streamable HTTP endpoint as `url` and needs `resource.mcp`: `{kind?, toolName, transport?, inputSchema?, example?}` (`kind`: `tool`, the default, `resource` or `prompt`, with `toolName` the tool's or prompt's name or the resource's URI; `transport`: `streamable-http`, the default, or `sse`); an `http` resource may not have one." }),
  probes: opt(ProbesConfig, Schema.decodeSync(ProbesConfig)({})).annotations({ description: "The probe schedule: how often each resource is probed, how long probes and their history are kept, and which targets they may reach." }),
  verification: opt(VerificationConfig, Schema.decodeSync(VerificationConfig)({})).annotations({ description: "How evidence becomes metrics, levels and statuses (docs/verification.md)." }),
  ingestion: opt(IngestionConfig, Schema.decodeSync(IngestionConfig)({})).annotations({ description: "What strangers may add to the catalog and how much of the probe workload it may take (docs/trust.md). Counted over untrusted entries (registration, imports, bazaar; not the catalog file's or what an operator listed) in the store, so instances sharing a database share them." }),
  signer: opt(SignerConfig, { ed25519KeyFile: "./data/signer.key" }).annotations({ description: "`{ed25519KeyFile}`: the Ed25519 key file (generated on first start, mode 0600), or `{hmacSecret}` (16+ characters) for HMAC-SHA256 receipts." }),
  budgets: opt(BudgetsConfig, Schema.decodeSync(BudgetsConfig)({})).annotations({ description: "Sponsored-fee and spend budgets of `/x402/settle`, over a rolling window." }),
  limits: opt(LimitsConfig, Schema.decodeSync(LimitsConfig)({})).annotations({ description: "Request rate limits per principal (the API key's principal, else the client address), counted in the store so instances sharing a Postgres database share them." }),
  shutdownGraceSeconds: opt(Schema.Number.pipe(Schema.positive(), Schema.finite()), 30).annotations({ description: "On SIGTERM or SIGINT, how long requests and settles in flight may take to finish before the process exits anyway (docs/operating.md)." }),
  apiKeys: opt(Schema.Array(ApiKeyEntry), []).annotations({ description: "`[{principal, sha256, policy?, role?}]`. When any exist, settle, verify, validate, register, receipt creation, `/x402/facilitators`, `/x402/settlements*` and `/health/dependencies` need `Authorization: Bearer <key>`.", examples: [[{ principal: "agent-1", sha256: "<sextant keys hash output>", role: "buyer" }]] }),
  openMode: opt(Schema.Boolean, false).annotations({ description: "With no `apiKeys`, allow `serve` to listen on a non-loopback `host` (every endpoint then open to the network); without it that start-up stops with exit 2." }),
  allowedHosts: opt(Schema.Array(Schema.String.pipe(Schema.pattern(/^[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/i, { message: () => "expected a host name or address, without scheme or port" }))), []).annotations({ description: "With no `apiKeys`, the names a request's `Host` and `Origin` may carry besides loopback names and addresses and `host`: behind a reverse proxy, the public name(s) it forwards under. Anything else is 403 `FOREIGN_ORIGIN` (a page in a browser must not drive an open service). Host names without scheme or port; with `apiKeys` the check is off.", examples: [["sextant.example.com"]] }),
  catalogSources: opt(Schema.Array(CatalogSource), []).annotations({ description: "`[{id, url, intervalSeconds?, networks?}]`: discovery services to import from (docs/verification.md, Imports); ids must be unique.", examples: [[{ id: "cdp-bazaar", url: "https://bazaar.example.com", intervalSeconds: 3600 }]] }),
  vertical: opt(VerticalConfig, Schema.decodeSync(VerticalConfig)({})).annotations({ description: "The paid reference vertical `serve` starts beside the service (docs/vertical.md)." }),
  ledger: opt(LedgerConfig, Schema.decodeSync(LedgerConfig)({})).annotations({ description: "Where the service reads the Stellar ledger: transaction evidence, settlement reconciliation, the vertical and payments. A `null` URL is the configured network's public endpoint." }),
  economicProbes: opt(EconomicProbesConfig, Schema.decodeSync(EconomicProbesConfig)({})).annotations({ description: "Economic probes: the service pays selected listed resources as a buyer would, with the operator's probe key, so the transaction success rate rests on payments it made itself." }),
  telemetry: opt(TelemetryConfig, Schema.decodeSync(TelemetryConfig)({})).annotations({ description: "Traces: off until `otlpEndpoint` names a collector; nothing leaves the process otherwise." }),
  logFormat: opt(Schema.Literal("text", "json"), "text").annotations({ description: "`text`: logfmt lines; `json`: one JSON object per line (`message`, `logLevel`, `timestamp`, `annotations`, `spans`, `fiberId`) for log shippers." }),
  demo: opt(DemoConfig, Schema.decodeSync(DemoConfig)({})).annotations({ description: "The demo providers `serve` starts beside the vertical (docs/vertical.md)." }),
  buyer: opt(BuyerConfig, Schema.decodeSync(BuyerConfig)({})).annotations({ description: "The buyer side (`sextant buy`, `sextant keys buyer-new`, the MCP `buy_resource` tool), run on the buyer's machine with the buyer's key. It pays on `network` in `asset`, simulating on `ledger.sorobanRpcUrl`." })
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
  // A union (an HTTP or an embedded facilitator entry) reports each member's issue: the one that
  // got furthest into the value, and a wrong value before a missing field (the other member's
  // discriminator), names what the operator got wrong.
  const rank = (i: ParseResult.ArrayFormatterIssue) => i.path.length * 2 + (i._tag === "Missing" ? 0 : 1)
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error).reduce<ParseResult.ArrayFormatterIssue | undefined>(
    (best, next) => (best === undefined || rank(next) > rank(best) ? next : best),
    undefined
  )
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
    if (isEmbedded(f) && f.network !== config.network) {
      return new ConfigError(`facilitators[${i}].network`, `the embedded facilitator settles on ${f.network} but the service runs on ${config.network} (its ledger endpoints are that network's)`)
    }
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
