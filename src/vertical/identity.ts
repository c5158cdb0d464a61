import { Asset, StrKey } from "@stellar/stellar-sdk"
import type { StellarNetwork } from "../domain/stellar.js"
import type { ContractInstance } from "./upstream.js"

/**
 * `classic`: named as CODE:ISSUER. `stellar_asset_contract`: named by the contract id of a
 * classic asset's built-in Soroban wrapper (SAC). `contract_token`: a custom Wasm token contract.
 */
export type AssetType = "classic" | "stellar_asset_contract" | "contract_token"

export interface AssetIdentity {
  readonly input: string
  readonly network: StellarNetwork
  readonly type: AssetType
  readonly code: string | null
  readonly issuer: string | null
  readonly contractId: string
}

export type ClassicIdentity = AssetIdentity & { readonly code: string; readonly issuer: string }

/** What a token contract's instance storage says about it, where it follows the common layouts. */
export interface InstanceFacts {
  readonly name: string | null
  readonly symbol: string | null
  readonly decimals: number | null
  readonly admin: string | null
}

const ADMIN_KEYS = new Set(["Admin", "admin"])

const isAddress = (value: unknown): value is string =>
  typeof value === "string" && (StrKey.isValidEd25519PublicKey(value) || StrKey.isValidContract(value))

/** A storage key `Admin` written as a bare symbol or as a one-variant enum (`[Admin]`), as the SAC does. */
const isAdminKey = (key: unknown): boolean =>
  (typeof key === "string" && ADMIN_KEYS.has(key)) ||
  (Array.isArray(key) && key.length === 1 && typeof key[0] === "string" && ADMIN_KEYS.has(key[0]))

const stringField = (record: Record<string, unknown>, field: string): string | null => {
  const value = record[field]
  return typeof value === "string" ? value : null
}

export const instanceFacts = (instance: ContractInstance): InstanceFacts => {
  const metadataEntry = instance.storage.find(([key]) => key === "METADATA")?.[1]
  const metadata =
    typeof metadataEntry === "object" && metadataEntry !== null ? (metadataEntry as Record<string, unknown>) : {}
  const decimals = metadata.decimal
  const admin = instance.storage.find(([key, value]) => isAdminKey(key) && isAddress(value))?.[1]
  return {
    name: stringField(metadata, "name"),
    symbol: stringField(metadata, "symbol"),
    decimals: typeof decimals === "number" ? decimals : null,
    admin: isAddress(admin) ? admin : null
  }
}

/**
 * The classic asset behind a Stellar Asset Contract. The SAC names itself "CODE:ISSUER"; the
 * claim is accepted only when that asset's derived contract id is this contract.
 */
export const sacClassicAsset = (
  contractId: string,
  facts: InstanceFacts,
  networkPassphrase: string
): { readonly code: string; readonly issuer: string } | null => {
  const [code, issuer, ...rest] = (facts.name ?? "").split(":")
  if (code === undefined || issuer === undefined || rest.length > 0) return null
  try {
    const asset = new Asset(code, issuer)
    return asset.contractId(networkPassphrase) === contractId ? { code, issuer } : null
  } catch {
    return null
  }
}

export const classicIdentity = (
  input: string,
  network: StellarNetwork,
  type: "classic" | "stellar_asset_contract",
  asset: { readonly code: string; readonly issuer: string },
  networkPassphrase: string
): ClassicIdentity => ({
  input,
  network,
  type,
  code: asset.code,
  issuer: asset.issuer,
  contractId: new Asset(asset.code, asset.issuer).contractId(networkPassphrase)
})
