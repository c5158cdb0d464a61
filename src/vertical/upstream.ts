import { Schema } from "effect"

/**
 * The parts of Horizon's JSON the vertical reads. Decoding through these schemas (rather than
 * trusting the SDK's record types) turns an upstream that changed shape into a clear 502 instead
 * of a wrong answer; unknown fields are ignored.
 */

const AccountFlags = Schema.Struct({
  auth_required: Schema.Boolean,
  auth_revocable: Schema.Boolean,
  auth_immutable: Schema.Boolean,
  auth_clawback_enabled: Schema.optionalWith(Schema.Boolean, { default: () => false })
})

const BalanceLine = Schema.Struct({
  asset_type: Schema.String,
  asset_code: Schema.optional(Schema.String),
  asset_issuer: Schema.optional(Schema.String),
  balance: Schema.String,
  limit: Schema.optional(Schema.String),
  is_authorized: Schema.optional(Schema.Boolean),
  is_authorized_to_maintain_liabilities: Schema.optional(Schema.Boolean),
  is_clawback_enabled: Schema.optional(Schema.Boolean),
  last_modified_ledger: Schema.optional(Schema.Number)
})
export type BalanceLine = typeof BalanceLine.Type

export const HorizonAccount = Schema.Struct({
  account_id: Schema.String,
  home_domain: Schema.optional(Schema.String),
  last_modified_ledger: Schema.Number,
  thresholds: Schema.Struct({
    low_threshold: Schema.Number,
    med_threshold: Schema.Number,
    high_threshold: Schema.Number
  }),
  flags: AccountFlags,
  signers: Schema.Array(Schema.Struct({ key: Schema.String, weight: Schema.Number, type: Schema.String })),
  balances: Schema.Array(BalanceLine)
})
export type HorizonAccount = typeof HorizonAccount.Type

const zeroAmount = () => "0.0000000"

/** A row of `/assets`: trustline counts and balances split by authorisation state. */
export const HorizonAssetStats = Schema.Struct({
  asset_code: Schema.String,
  asset_issuer: Schema.String,
  accounts: Schema.Struct({
    authorized: Schema.Number,
    authorized_to_maintain_liabilities: Schema.Number,
    unauthorized: Schema.Number
  }),
  balances: Schema.Struct({
    authorized: Schema.String,
    authorized_to_maintain_liabilities: Schema.String,
    unauthorized: Schema.String
  }),
  num_claimable_balances: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  num_liquidity_pools: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  num_contracts: Schema.optionalWith(Schema.Number, { default: () => 0 }),
  claimable_balances_amount: Schema.optionalWith(Schema.String, { default: zeroAmount }),
  liquidity_pools_amount: Schema.optionalWith(Schema.String, { default: zeroAmount }),
  contracts_amount: Schema.optionalWith(Schema.String, { default: zeroAmount })
})
export type HorizonAssetStats = typeof HorizonAssetStats.Type

const BalanceChange = Schema.Struct({
  type: Schema.String,
  from: Schema.optional(Schema.String),
  to: Schema.optional(Schema.String),
  amount: Schema.String,
  asset_type: Schema.String,
  asset_code: Schema.optional(Schema.String),
  asset_issuer: Schema.optional(Schema.String)
})

const nullable = <S extends Schema.Schema.Any>(s: S) => Schema.optional(Schema.NullOr(s))

/**
 * One operation record. Horizon sends a different set of fields per `type`; every field a
 * change detector reads is optional here and checked where it is used.
 */
export const HorizonOperation = Schema.Struct({
  id: Schema.String,
  paging_token: Schema.String,
  type: Schema.String,
  source_account: Schema.String,
  created_at: Schema.String,
  transaction_hash: Schema.String,
  transaction_successful: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  set_flags: nullable(Schema.Array(Schema.Number)),
  clear_flags: nullable(Schema.Array(Schema.Number)),
  home_domain: nullable(Schema.String),
  master_key_weight: nullable(Schema.Number),
  signer_key: nullable(Schema.String),
  signer_weight: nullable(Schema.Number),
  low_threshold: nullable(Schema.Number),
  med_threshold: nullable(Schema.Number),
  high_threshold: nullable(Schema.Number),
  from: nullable(Schema.String),
  to: nullable(Schema.String),
  amount: nullable(Schema.String),
  asset_type: nullable(Schema.String),
  asset_code: nullable(Schema.String),
  asset_issuer: nullable(Schema.String),
  trustor: nullable(Schema.String),
  authorize: nullable(Schema.Boolean),
  authorize_to_maintain_liabilities: nullable(Schema.Boolean),
  asset_balance_changes: nullable(Schema.Array(BalanceChange))
})
export type HorizonOperation = typeof HorizonOperation.Type

export const HorizonLedger = Schema.Struct({ sequence: Schema.Number, closed_at: Schema.String })

/** A Soroban contract instance, read from its ledger entry and turned into plain values. */
export interface ContractInstance {
  readonly executable: { readonly type: "stellar_asset" } | { readonly type: "wasm"; readonly wasmHash: string }
  /** Instance storage as [key, value] pairs, each converted with `scValToNative`. */
  readonly storage: ReadonlyArray<readonly [unknown, unknown]>
  readonly lastModifiedLedger: number | null
  readonly liveUntilLedger: number | null
}

/** A token contract event with its topics reduced to the name and the addresses they carry. */
export interface TokenEvent {
  readonly name: string
  readonly addresses: ReadonlyArray<string>
  /** The event data, converted with `scValToNative` (an amount, a flag, an address or a map). */
  readonly value: unknown
  readonly ledger: number
  readonly time: string
  readonly transaction: string
}

export interface TokenEventWindow {
  readonly fromLedger: number
  readonly toLedger: number
  readonly events: ReadonlyArray<TokenEvent>
}

/** The outcome of looking for a SEP-1 stellar.toml; a missing file is information, not an error. */
export type TomlLookup =
  | { readonly status: "published"; readonly url: string; readonly document: Readonly<Record<string, unknown>> }
  | { readonly status: "unavailable"; readonly url: string; readonly reason: string }
  | { readonly status: "skipped"; readonly reason: string }
