import { formatUnits, fromStroops, shareOf, toStroops } from "./amounts.js"
import type { AssetIdentity } from "./identity.js"
import type { ContractInstance, HorizonOperation, TokenEvent, TokenEventWindow } from "./upstream.js"

export type ChangeKind =
  | "issuer_flags_changed"
  | "home_domain_changed"
  | "issuer_signers_changed"
  | "mint"
  | "burn"
  | "clawback"
  | "trustline_authorization_changed"
  | "contract_admin_changed"
  | "contract_instance_modified"

export interface AssetChange {
  readonly kind: ChangeKind
  readonly ledger: number | null
  readonly time: string | null
  readonly transaction: string | null
  readonly details: Readonly<Record<string, unknown>>
}

export interface ChangesAnswer {
  readonly asset: AssetIdentity
  readonly source: {
    readonly api: "horizon" | "soroban-rpc"
    readonly description: string
    /** Mints and burns below this amount are not listed; null when every one is. */
    readonly largeFrom: string | null
  }
  readonly changes: ReadonlyArray<AssetChange>
}

/** Account flags as `set_options` numbers them. */
const ACCOUNT_FLAGS: Readonly<Record<number, string>> = {
  1: "auth_required",
  2: "auth_revocable",
  4: "auth_immutable",
  8: "auth_clawback_enabled"
}

/** Trustline flags as `set_trust_line_flags` numbers them. */
const TRUSTLINE_FLAGS: Readonly<Record<number, string>> = {
  1: "authorized",
  2: "authorized_to_maintain_liabilities",
  4: "clawback_enabled"
}

const flagNames = (table: Readonly<Record<number, string>>, flags: ReadonlyArray<number> | null | undefined) =>
  (flags ?? []).map((f) => table[f] ?? `flag_${f}`)

/** Horizon ids are TOIDs: the ledger sequence sits in the top 32 bits. */
export const ledgerOfPagingToken = (token: string): number | null =>
  /^\d+$/.test(token) ? Number(BigInt(token) >> 32n) : null

const at = (op: HorizonOperation) => ({
  ledger: ledgerOfPagingToken(op.paging_token),
  time: op.created_at,
  transaction: op.transaction_hash
})

const isLarge = (amount: string, largeFrom: bigint | null): boolean => {
  if (largeFrom === null) return true
  const stroops = toStroops(amount)
  return stroops !== null && stroops >= largeFrom
}

const issuerOptionChanges = (op: HorizonOperation): ReadonlyArray<AssetChange> => {
  const changes: Array<AssetChange> = []
  const set = flagNames(ACCOUNT_FLAGS, op.set_flags)
  const cleared = flagNames(ACCOUNT_FLAGS, op.clear_flags)
  if (set.length > 0 || cleared.length > 0)
    changes.push({ kind: "issuer_flags_changed", ...at(op), details: { set, cleared } })
  if (op.home_domain !== undefined && op.home_domain !== null) {
    changes.push({ kind: "home_domain_changed", ...at(op), details: { homeDomain: op.home_domain } })
  }
  const signers: Record<string, unknown> = {}
  if (op.master_key_weight != null) signers.masterKeyWeight = op.master_key_weight
  if (op.signer_key != null) signers.signer = { key: op.signer_key, weight: op.signer_weight ?? null }
  if (op.low_threshold != null || op.med_threshold != null || op.high_threshold != null) {
    signers.thresholds = {
      low: op.low_threshold ?? null,
      medium: op.med_threshold ?? null,
      high: op.high_threshold ?? null
    }
  }
  if (Object.keys(signers).length > 0) changes.push({ kind: "issuer_signers_changed", ...at(op), details: signers })
  return changes
}

const BALANCE_CHANGE_KINDS: Readonly<Record<string, ChangeKind>> = { mint: "mint", burn: "burn", clawback: "clawback" }

/**
 * Changes visible in the issuer's recent operations: flag and signer changes it made to itself,
 * trustline authorisations it granted or revoked, clawbacks, and mints (payments from the
 * issuer) and burns (payments back to it) of at least `largeFrom` stroops. Operations arrive
 * newest first and keep that order.
 */
export const classicChanges = (
  asset: { readonly code: string; readonly issuer: string },
  operations: ReadonlyArray<HorizonOperation>,
  largeFrom: bigint | null
): ReadonlyArray<AssetChange> => {
  const isAsset = (code: string | null | undefined, issuer: string | null | undefined) =>
    code === asset.code && issuer === asset.issuer
  return operations.flatMap((op): ReadonlyArray<AssetChange> => {
    if (!op.transaction_successful) return []
    switch (op.type) {
      case "set_options":
        return op.source_account === asset.issuer ? issuerOptionChanges(op) : []
      case "payment": {
        if (!isAsset(op.asset_code, op.asset_issuer) || !op.amount || !isLarge(op.amount, largeFrom)) return []
        if (op.from === asset.issuer)
          return [{ kind: "mint", ...at(op), details: { to: op.to ?? null, amount: op.amount } }]
        if (op.to === asset.issuer)
          return [{ kind: "burn", ...at(op), details: { from: op.from ?? null, amount: op.amount } }]
        return []
      }
      case "clawback":
        return isAsset(op.asset_code, op.asset_issuer)
          ? [{ kind: "clawback", ...at(op), details: { from: op.from ?? null, amount: op.amount ?? null } }]
          : []
      case "set_trust_line_flags":
        return isAsset(op.asset_code, op.asset_issuer)
          ? [
              {
                kind: "trustline_authorization_changed",
                ...at(op),
                details: {
                  trustor: op.trustor ?? null,
                  set: flagNames(TRUSTLINE_FLAGS, op.set_flags),
                  cleared: flagNames(TRUSTLINE_FLAGS, op.clear_flags)
                }
              }
            ]
          : []
      case "allow_trust":
        return isAsset(op.asset_code, op.asset_issuer)
          ? [
              {
                kind: "trustline_authorization_changed",
                ...at(op),
                details: {
                  trustor: op.trustor ?? null,
                  authorized: op.authorize ?? null,
                  authorizedToMaintainLiabilities: op.authorize_to_maintain_liabilities ?? null
                }
              }
            ]
          : []
      case "invoke_host_function":
        return (op.asset_balance_changes ?? []).flatMap((change): ReadonlyArray<AssetChange> => {
          const kind = BALANCE_CHANGE_KINDS[change.type]
          if (!kind || !isAsset(change.asset_code, change.asset_issuer)) return []
          if (kind !== "clawback" && !isLarge(change.amount, largeFrom)) return []
          return [
            { kind, ...at(op), details: { from: change.from ?? null, to: change.to ?? null, amount: change.amount } }
          ]
        })
      default:
        return []
    }
  })
}

/** The amount in a token event's data: a bare i128, or the `amount` of a map (CAP-67 muxed form). */
const eventAmount = (value: unknown): bigint | null => {
  if (typeof value === "bigint") return value
  if (typeof value === "object" && value !== null && typeof (value as Record<string, unknown>).amount === "bigint") {
    return (value as Record<string, bigint>).amount ?? null
  }
  return null
}

const scaled = (units: bigint, decimals: number | null): Record<string, string> =>
  decimals === null
    ? { baseUnits: units.toString() }
    : { baseUnits: units.toString(), amount: formatUnits(units, decimals) }

/**
 * Changes from a token contract's events. Topic layouts differ between the SAC before and after
 * protocol 23 (the admin address was dropped from `mint`, `clawback`, `set_authorized`), so the
 * affected holder is taken as the last address in the topics, which is right in both.
 */
const eventChange = (event: TokenEvent, decimals: number | null): AssetChange | null => {
  const where = { ledger: event.ledger, time: event.time, transaction: event.transaction }
  const holder = event.addresses.at(-1) ?? null
  const amount = eventAmount(event.value)
  switch (event.name) {
    case "mint":
      return amount === null ? null : { kind: "mint", ...where, details: { to: holder, ...scaled(amount, decimals) } }
    case "burn":
      return amount === null ? null : { kind: "burn", ...where, details: { from: holder, ...scaled(amount, decimals) } }
    case "clawback":
      return amount === null
        ? null
        : { kind: "clawback", ...where, details: { from: holder, ...scaled(amount, decimals) } }
    case "set_authorized":
      return typeof event.value === "boolean"
        ? { kind: "trustline_authorization_changed", ...where, details: { holder, authorized: event.value } }
        : null
    case "set_admin":
      return typeof event.value === "string"
        ? { kind: "contract_admin_changed", ...where, details: { admin: event.value } }
        : null
    default:
      return null
  }
}

/** Token events in the window plus the last modification of the contract instance, newest first. */
export const contractChanges = (
  window: TokenEventWindow,
  instance: ContractInstance,
  instanceModifiedAt: string | null,
  decimals: number | null
): ReadonlyArray<AssetChange> => {
  const fromEvents = window.events.flatMap((e) => {
    const change = eventChange(e, decimals)
    return change ? [change] : []
  })
  const instanceChange: ReadonlyArray<AssetChange> =
    instance.lastModifiedLedger === null
      ? []
      : [
          {
            kind: "contract_instance_modified",
            ledger: instance.lastModifiedLedger,
            time: instanceModifiedAt,
            transaction: null,
            details: {
              executable: instance.executable.type,
              wasmHash: instance.executable.type === "wasm" ? instance.executable.wasmHash : null,
              note: "the instance (its code reference or instance storage) last changed at this ledger; an upgrade shows here"
            }
          }
        ]
  return [...fromEvents, ...instanceChange].sort((a, b) => (b.ledger ?? 0) - (a.ledger ?? 0))
}

export const largeThreshold = (supplyTotal: string | null, share: number): bigint | null => {
  const supply = supplyTotal === null ? null : toStroops(supplyTotal)
  return supply === null || supply === 0n ? null : shareOf(supply, share)
}

export const formatThreshold = (threshold: bigint | null): string | null =>
  threshold === null ? null : fromStroops(threshold)
