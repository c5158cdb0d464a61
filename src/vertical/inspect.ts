import { sumAmounts } from "./amounts.js"
import { type AssetIdentity, type ClassicIdentity, type InstanceFacts, instanceFacts } from "./identity.js"
import type { ContractInstance, HorizonAccount, HorizonAssetStats, TomlLookup } from "./upstream.js"

export interface IssuerSignals {
  readonly account: string
  readonly flags: {
    readonly authRequired: boolean
    readonly authRevocable: boolean
    readonly authClawbackEnabled: boolean
    readonly authImmutable: boolean
  }
  readonly homeDomain: string | null
  /** No signer set can reach the medium threshold any more, so no new units can be issued. */
  readonly issuanceLocked: boolean
  readonly lastModifiedLedger: number
}

export interface ContractState {
  readonly deployed: boolean
  readonly executable: "stellar_asset" | "wasm" | null
  readonly wasmHash: string | null
  readonly admin: string | null
  readonly lastModifiedLedger: number | null
  readonly liveUntilLedger: number | null
}

export interface InspectAnswer {
  readonly asset: AssetIdentity
  readonly issuer: IssuerSignals | null
  readonly metadata: {
    readonly stellarToml: {
      readonly status: TomlLookup["status"] | "not_applicable"
      readonly url: string | null
      readonly reason: string | null
      readonly organization: string | null
      readonly currency: Readonly<Record<string, string | number | boolean>> | null
    }
    readonly contract: Pick<InstanceFacts, "name" | "symbol" | "decimals"> | null
  }
  readonly supply: {
    readonly total: string
    readonly authorized: string
    readonly authorizedToMaintainLiabilities: string
    readonly unauthorized: string
    readonly claimableBalances: string
    readonly liquidityPools: string
    readonly contracts: string
  } | null
  readonly holders: {
    readonly trustlines: number
    readonly authorized: number
    readonly authorizedToMaintainLiabilities: number
    readonly unauthorized: number
    readonly contracts: number
    readonly claimableBalances: number
    readonly liquidityPools: number
  } | null
  readonly technical: {
    /** At least one trustline, claimable balance, pool or contract balance exists (classic assets). */
    readonly issued: boolean | null
    readonly contract: ContractState
  }
  /** Why a field is null or what a figure leaves out. */
  readonly notes: ReadonlyArray<string>
}

export const issuerSignals = (account: HorizonAccount): IssuerSignals => {
  const weight = account.signers.reduce((sum, s) => sum + s.weight, 0)
  return {
    account: account.account_id,
    flags: {
      authRequired: account.flags.auth_required,
      authRevocable: account.flags.auth_revocable,
      authClawbackEnabled: account.flags.auth_clawback_enabled,
      authImmutable: account.flags.auth_immutable
    },
    homeDomain: account.home_domain ? account.home_domain : null,
    // A payment needs the medium threshold and at least one signature of weight 1 or more.
    issuanceLocked: weight < Math.max(1, account.thresholds.med_threshold),
    lastModifiedLedger: account.last_modified_ledger
  }
}

export const contractState = (instance: ContractInstance | null): ContractState =>
  instance === null
    ? {
        deployed: false,
        executable: null,
        wasmHash: null,
        admin: null,
        lastModifiedLedger: null,
        liveUntilLedger: null
      }
    : {
        deployed: true,
        executable: instance.executable.type,
        wasmHash: instance.executable.type === "wasm" ? instance.executable.wasmHash : null,
        admin: instanceFacts(instance).admin,
        lastModifiedLedger: instance.lastModifiedLedger,
        liveUntilLedger: instance.liveUntilLedger
      }

/** SEP-1 currency fields worth showing a buyer; anything else in the entry is left out. */
const CURRENCY_FIELDS = [
  "code",
  "issuer",
  "status",
  "display_decimals",
  "name",
  "desc",
  "conditions",
  "image",
  "fixed_number",
  "max_number",
  "is_unlimited",
  "is_asset_anchored",
  "anchor_asset_type",
  "anchor_asset",
  "attestation_of_reserve",
  "redemption_instructions",
  "regulated",
  "approval_server",
  "approval_criteria"
] as const

const isPrimitive = (v: unknown): v is string | number | boolean =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean"

/** The `[[CURRENCIES]]` entry for exactly this code and issuer, reduced to its documented fields. */
export const currencyEntry = (
  document: Readonly<Record<string, unknown>>,
  code: string,
  issuer: string
): Readonly<Record<string, string | number | boolean>> | null => {
  const currencies = Array.isArray(document.CURRENCIES) ? (document.CURRENCIES as ReadonlyArray<unknown>) : []
  const entry = currencies.find(
    (c): c is Record<string, unknown> =>
      typeof c === "object" &&
      c !== null &&
      (c as Record<string, unknown>).code === code &&
      (c as Record<string, unknown>).issuer === issuer
  )
  if (!entry) return null
  const picked: Record<string, string | number | boolean> = {}
  for (const field of CURRENCY_FIELDS) {
    const value = entry[field]
    if (isPrimitive(value)) picked[field] = value
  }
  return picked
}

const organizationName = (document: Readonly<Record<string, unknown>>): string | null => {
  const documentation = document.DOCUMENTATION
  if (typeof documentation !== "object" || documentation === null) return null
  const name = (documentation as Record<string, unknown>).ORG_NAME
  return typeof name === "string" ? name : null
}

const tomlSummary = (toml: TomlLookup, code: string, issuer: string): InspectAnswer["metadata"]["stellarToml"] => {
  switch (toml.status) {
    case "published":
      return {
        status: "published",
        url: toml.url,
        reason: null,
        organization: organizationName(toml.document),
        currency: currencyEntry(toml.document, code, issuer)
      }
    case "unavailable":
      return { status: "unavailable", url: toml.url, reason: toml.reason, organization: null, currency: null }
    case "skipped":
      return { status: "skipped", url: null, reason: toml.reason, organization: null, currency: null }
  }
}

export interface ClassicInspectInput {
  readonly identity: ClassicIdentity
  readonly issuer: HorizonAccount
  readonly stats: HorizonAssetStats | null
  readonly sac: ContractInstance | null
  readonly toml: TomlLookup
}

const ZERO = "0.0000000"

/** Where the issued units sit, by authorisation state and holder kind; all zero before any trustline. */
export const supplyParts = (stats: HorizonAssetStats | null) => ({
  authorized: stats?.balances.authorized ?? ZERO,
  authorizedToMaintainLiabilities: stats?.balances.authorized_to_maintain_liabilities ?? ZERO,
  unauthorized: stats?.balances.unauthorized ?? ZERO,
  claimableBalances: stats?.claimable_balances_amount ?? ZERO,
  liquidityPools: stats?.liquidity_pools_amount ?? ZERO,
  contracts: stats?.contracts_amount ?? ZERO
})

/** Total issued units; null when Horizon reported an amount that is not one. */
export const supplyTotal = (stats: HorizonAssetStats | null): string | null =>
  sumAmounts(Object.values(supplyParts(stats)))

export const inspectClassic = ({ identity, issuer, stats, sac, toml }: ClassicInspectInput): InspectAnswer => {
  const notes: Array<string> = []
  const parts = supplyParts(stats)
  const total = supplyTotal(stats)
  if (total === null) notes.push("supply: Horizon reported an amount that is not a number; supply left out")
  if (!stats) notes.push("supply and holders: Horizon lists no trustline or balance for this asset yet")
  const accounts = stats?.accounts ?? { authorized: 0, authorized_to_maintain_liabilities: 0, unauthorized: 0 }
  const holders = {
    trustlines: accounts.authorized + accounts.authorized_to_maintain_liabilities + accounts.unauthorized,
    authorized: accounts.authorized,
    authorizedToMaintainLiabilities: accounts.authorized_to_maintain_liabilities,
    unauthorized: accounts.unauthorized,
    contracts: stats?.num_contracts ?? 0,
    claimableBalances: stats?.num_claimable_balances ?? 0,
    liquidityPools: stats?.num_liquidity_pools ?? 0
  }
  notes.push("supply excludes units held by the issuer itself, which Stellar does not count as issued")
  return {
    asset: identity,
    issuer: issuerSignals(issuer),
    metadata: { stellarToml: tomlSummary(toml, identity.code, identity.issuer), contract: null },
    supply: total === null ? null : { total, ...parts },
    holders,
    technical: { issued: stats !== null, contract: contractState(sac) },
    notes
  }
}

export const inspectContract = (identity: AssetIdentity, instance: ContractInstance): InspectAnswer => {
  const facts = instanceFacts(instance)
  return {
    asset: identity,
    issuer: null,
    metadata: {
      stellarToml: {
        status: "not_applicable",
        url: null,
        reason: "a custom contract token has no issuing account or home domain",
        organization: null,
        currency: null
      },
      contract: { name: facts.name, symbol: facts.symbol, decimals: facts.decimals }
    },
    supply: null,
    holders: null,
    technical: { issued: null, contract: contractState(instance) },
    notes: [
      "supply and holders: a custom contract token keeps balances in its own storage, which the ledger APIs do not total"
    ]
  }
}
