import { Networks, StrKey } from "@stellar/stellar-sdk"
import { Schema } from "effect"

/** CAIP-2 style network ids this deployment can speak. */
export const StellarNetwork = Schema.Literal("stellar:testnet", "stellar:pubnet").annotations({
  identifier: "StellarNetwork"
})
export type StellarNetwork = typeof StellarNetwork.Type

/** The passphrase a network's transactions are hashed and signed with. */
export const networkPassphrase = (network: StellarNetwork): string =>
  network === "stellar:pubnet" ? Networks.PUBLIC : Networks.TESTNET

export const PaymentScheme = Schema.Literal("exact", "upto").annotations({ identifier: "PaymentScheme" })
export type PaymentScheme = typeof PaymentScheme.Type

/**
 * Remembers strings already checked: a route answer re-encodes the same few payees hundreds of
 * times, and a strkey check (base32 + CRC16) is not free. Bounded, so a flood of distinct
 * inputs cannot grow it without limit.
 */
const memoized = (check: (s: string) => boolean, limit = 10_000) => {
  const seen = new Map<string, boolean>()
  return (s: string) => {
    const known = seen.get(s)
    if (known !== undefined) return known
    const valid = check(s)
    if (seen.size >= limit) seen.clear()
    seen.set(s, valid)
    return valid
  }
}

const isStellarAddress = memoized((s) => StrKey.isValidEd25519PublicKey(s) || StrKey.isValidContract(s))

/**
 * A generator of valid keys for property tests and the fuzzer: a checksum is never hit by chance,
 * so filtering random strings for one would never end.
 */
const strkeys = (encode: (bytes: Buffer) => string) => () => (fc: typeof import("effect").FastCheck) =>
  fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => encode(Buffer.from(bytes)))

/** A G... account or C... contract address, checked with the SDK's strkey codec (checksum included). */
export const StellarAddress = Schema.String.pipe(
  Schema.filter(isStellarAddress, {
    message: () => "expected a Stellar account (G...) or contract (C...) address with a valid checksum"
  })
).annotations({
  identifier: "StellarAddress",
  // The strkey's shape; its checksum is beyond a pattern (docs/reference/http.md).
  jsonSchema: { pattern: "^[GC][A-Z2-7]{55}$" },
  arbitrary: strkeys((bytes) =>
    bytes[0]! % 2 === 0 ? StrKey.encodeEd25519PublicKey(bytes) : StrKey.encodeContract(bytes)
  )
})

/** A Soroban contract id (C...), e.g. the SEP-41 wrapper of a classic asset. */
export const ContractId = Schema.String.pipe(
  Schema.filter((s) => StrKey.isValidContract(s), {
    message: () => "expected a Stellar contract id (C...) with a valid checksum"
  })
).annotations({
  identifier: "ContractId",
  jsonSchema: { pattern: "^C[A-Z2-7]{55}$" },
  arbitrary: strkeys((bytes) => StrKey.encodeContract(bytes))
})

/** Non-negative integer amount in asset base units, as a decimal string without leading zeros. */
export const BaseUnits = Schema.String.pipe(
  Schema.pattern(/^(0|[1-9][0-9]{0,30})$/, {
    message: () => 'expected an amount in base units: a non-negative integer string such as "10000"'
  })
).annotations({ identifier: "BaseUnits" })

/** Dotted lowercase capability name, e.g. `rwa.inspect`. */
export const Capability = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/, {
    message: () => 'expected a dotted lowercase capability name such as "rwa.inspect"'
  })
).annotations({ identifier: "Capability" })

export const USDC_DECIMALS = 7

/** USD value of an amount of a USD-pegged asset with `decimals` places (USDC here: 1 unit = $1). */
export const baseUnitsToUsd = (amount: string, decimals = USDC_DECIMALS): number => {
  const units = BigInt(amount)
  const scale = 10n ** BigInt(decimals)
  return Number(units / scale) + Number(units % scale) / Number(scale)
}

/**
 * Base units for a USD figure, or null when the figure has more precision than the asset can carry.
 * Used to check that a declared `amountUsd` and an `amount` describe the same money.
 */
export const usdToBaseUnits = (usd: number, decimals = USDC_DECIMALS): string | null => {
  if (!Number.isFinite(usd) || usd < 0) return null
  const scaled = usd * 10 ** decimals
  const rounded = Math.round(scaled)
  if (Math.abs(scaled - rounded) > 1e-6 * Math.max(1, Math.abs(scaled) / 1e9)) return null
  return BigInt(rounded).toString()
}

/** Base units of a USD figure, rounded down: a budget or a price cap is never read as larger than it is. */
export const usdFloorUnits = (usd: number, decimals = USDC_DECIMALS): bigint =>
  BigInt(Math.floor(usd * 10 ** decimals + 1e-6))

export const usdMatchesBaseUnits = (usd: number, amount: string, decimals = USDC_DECIMALS): boolean =>
  usdToBaseUnits(usd, decimals) === amount
