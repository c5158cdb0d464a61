import type { JournalEntry, ReconcileOutcome } from "../domain/settlements.js"
import type { TransferEvent } from "../ledger/LedgerReader.js"

/**
 * How far back from an authorisation's expiration ledger its payment is looked for: about a day
 * of 5-second ledgers. A buyer's authorisation is valid for minutes (maxTimeoutSeconds), so its
 * transfer can only have landed in the ledgers just before its expiration.
 */
export const LOOKBACK_LEDGERS = 17_280

/**
 * The fastest ledger close an authorisation's lifetime is judged with. A wallet sets its
 * expiration to `latest + ceil(maxTimeoutSeconds / its close-time estimate)` (the x402 Stellar
 * scheme; 5 s is the network's target, pubnet's median is about 6 s); judging with 1 s accepts any
 * estimate down to a fifth of today's close time, while an authorisation asked for a minute can
 * still never be valid for more than about five.
 */
export const FASTEST_CLOSE_SECONDS = 1
/** Ledgers a wallet's latest ledger may run ahead of the one read here (the x402 reference facilitator's tolerance). */
export const EXPIRATION_TOLERANCE_LEDGERS = 2

/**
 * How many ledgers past the latest one a payment's authorisation may stay valid: what the
 * requirements' `maxTimeoutSeconds` allows at the fastest close, and never beyond the ledgers the
 * reconciler searches back from an expiration (else a payment it must resolve could land where it
 * never looks). Without `maxTimeoutSeconds`, the search bound alone.
 */
export const authorizationHorizon = (maxTimeoutSeconds: number | undefined): number =>
  maxTimeoutSeconds === undefined
    ? LOOKBACK_LEDGERS
    : Math.min(
        LOOKBACK_LEDGERS,
        Math.ceil(Math.max(0, maxTimeoutSeconds) / FASTEST_CLOSE_SECONDS) + EXPIRATION_TOLERANCE_LEDGERS
      )

/** What the ledger showed for an unresolved entry's payment. */
export interface LedgerFindings {
  /** The payer's authorisation nonce entry exists: the authorisation was used. */
  readonly nonceConsumed: boolean
  /**
   * `transfer` events of the asset from the payer to the payee in [start, min(expiration, latest)]
   * whose transaction carries this entry's authorisation (payer and nonce): executions of this
   * signed payment, never another payment between the same parties (`findExecution`).
   */
  readonly transfers: ReadonlyArray<TransferEvent>
  readonly latestLedger: number
}

/** The ledger range a payment authorised until `expirationLedger` can have landed in, as read at `latestLedger`. */
export const searchRange = (expirationLedger: number, latestLedger: number) => ({
  startLedger: Math.max(1, expirationLedger - LOOKBACK_LEDGERS),
  endLedger: Math.min(expirationLedger, latestLedger)
})

/** Whether a transferred amount is the entry's: `exact` pays the amount, `upto` anything up to the worst case. */
export const amountMatches = (entry: Pick<JournalEntry, "scheme" | "amount" | "worstCaseUnits">) => (amount: bigint) =>
  entry.scheme === "upto" ? amount > 0n && amount <= entry.worstCaseUnits : amount === BigInt(entry.amount)

const matches = (entry: JournalEntry, event: TransferEvent) =>
  event.contract === entry.asset &&
  event.from === entry.payer &&
  event.to === entry.payTo &&
  amountMatches(entry)(event.amount)

/**
 * Judges an entry whose settle outcome is unknown by what the ledger holds; null while it cannot
 * tell yet. Paid only when a matching transfer appears in a transaction carrying this entry's
 * authorisation: a consumed nonce alone proves nothing (the payer may have signed something else
 * with it), so it only means "wait". Unpaid only when the authorisation has expired (nothing can
 * use it any more) and no such transfer exists in the ledgers up to its expiration.
 */
export const judgeUnresolved = (entry: JournalEntry, findings: LedgerFindings): ReconcileOutcome | null => {
  const authorization = entry.authorization
  if (authorization === null) return null
  const settled = (transaction: string | null, reason: string): ReconcileOutcome => ({
    _tag: "Settled",
    transaction,
    reason,
    answer: {
      success: true,
      transaction: transaction ?? "",
      network: entry.network,
      ...(entry.payer !== null ? { payer: entry.payer } : {})
    }
  })
  const transfer = findings.transfers.find((event) => matches(entry, event))
  if (transfer !== undefined) {
    return settled(
      transfer.transactionHash,
      `the ledger shows the transfer in transaction ${transfer.transactionHash} (ledger ${transfer.ledger})`
    )
  }
  if (findings.nonceConsumed) return null
  if (findings.latestLedger > authorization.expirationLedger) {
    const { startLedger, endLedger } = searchRange(authorization.expirationLedger, findings.latestLedger)
    return {
      _tag: "Unpaid",
      reason:
        `the authorisation expired at ledger ${authorization.expirationLedger} (latest ${findings.latestLedger}) and no ` +
        `matching transfer exists in ledgers ${startLedger}-${endLedger}: the payment never happened; its fee reservation is released`
    }
  }
  return null
}
