import { Context, Data, Effect, Layer, type Option } from "effect"
import { AppConfig } from "../config.js"
import type { AddressAuthorization } from "./authEntries.js"
import { type LedgerReaderOptions, makeLedgerReader } from "./read.js"

/** A SEP-41 `transfer(from, to, amount)` a transaction executed, or a `transfer` event the contract emitted. */
export interface LedgerTransfer {
  /** The token contract (C...) that moved the funds. */
  readonly contract: string
  readonly from: string
  readonly to: string
  readonly amount: bigint
}

/**
 * A transaction as the ledger recorded it, checked: its envelope hashes to `hash` (the outer hash
 * of a fee bump), so an answer about another transaction is never taken for this one.
 */
export interface LedgerTransaction {
  readonly hash: string
  readonly successful: boolean
  readonly ledger: number
  /** Close time of its ledger, ISO 8601. */
  readonly closedAt: string
  /**
   * The SEP-41 transfers it executed, from the `transfer` events of its result meta (never from the
   * envelope, which says what was asked, not what happened). Empty when the ledger kept no meta.
   */
  readonly transfers: ReadonlyArray<LedgerTransfer>
  /** The address-credential authorisations (payer, nonce) its envelope carries: whose signed payment it executed. */
  readonly authorizations: ReadonlyArray<AddressAuthorization>
}

/** A `transfer` event of a token contract, with where it happened. */
export interface TransferEvent extends LedgerTransfer {
  readonly ledger: number
  readonly transactionHash: string
  readonly closedAt: string
}

/** Horizon or Soroban RPC could not answer (unreachable, 5xx, timeout, malformed answer). */
export class LedgerUnavailable extends Data.TaggedError("LedgerUnavailable")<{ readonly message: string }> {}

export interface LedgerReaderShape {
  /** A transaction by hash (hex); none when the ledger does not know it. */
  readonly transaction: (hash: string) => Effect.Effect<Option.Option<LedgerTransaction>, LedgerUnavailable>
  /**
   * Whether the Soroban authorisation nonce of `address` is consumed: its temporary nonce ledger
   * entry exists. The entry lives until the authorisation's expiration ledger, so `false` after
   * that ledger proves nothing.
   */
  readonly nonceConsumed: (address: string, nonce: bigint) => Effect.Effect<boolean, LedgerUnavailable>
  /** `nonceConsumed`, with the latest ledger the same answer was read at (one RPC call for both). */
  readonly nonceAt: (
    address: string,
    nonce: bigint
  ) => Effect.Effect<{ readonly consumed: boolean; readonly latestLedger: number }, LedgerUnavailable>
  /** `transfer` events of `contract` from `from` to `to` in ledgers [startLedger, endLedger]. */
  readonly transferEvents: (query: {
    readonly contract: string
    readonly from: string
    readonly to: string
    readonly startLedger: number
    readonly endLedger: number
  }) => Effect.Effect<ReadonlyArray<TransferEvent>, LedgerUnavailable>
  /** The newest closed ledger's sequence. */
  readonly latestLedger: () => Effect.Effect<number, LedgerUnavailable>
}

/**
 * The one reader of the Stellar ledger: transaction evidence, settlement reconciliation and the
 * vertical all read through it, from the configured `ledger` endpoints.
 */
export class LedgerReader extends Context.Tag("sextant/LedgerReader")<LedgerReader, LedgerReaderShape>() {
  /** A reader of the given endpoints through `@stellar/stellar-sdk` (Soroban RPC first, Horizon for history). */
  static readonly layer = (options: LedgerReaderOptions): Layer.Layer<LedgerReader> =>
    Layer.sync(LedgerReader, () => makeLedgerReader(options))
  /** The reader of the configured `ledger` endpoints. */
  static readonly Live: Layer.Layer<LedgerReader, never, AppConfig> = Layer.unwrapEffect(
    Effect.map(AppConfig, ({ ledger, network }) => LedgerReader.layer({ ...ledger, network }))
  )
}
