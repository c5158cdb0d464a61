import type { PaymentId, PrincipalId, SettlementId } from "./ids.js"
import type { SettlementRecord } from "./x402.js"

export type SettlementState = SettlementRecord["state"]

/** Every backend's error, in the order they were met. */
export type BackendErrors = ReadonlyArray<{ readonly backendId: string; readonly error: string }>

/** The answer given to the first request, replayed to repeats: an HTTP status and its JSON body. */
export interface StoredAnswer {
  readonly status: number
  readonly body: unknown
}

/** A settlement about to be journaled `pending`, with what it reserves. */
export interface NewEntry {
  readonly id: SettlementId
  /** The client's `Idempotency-Key`, scoped to `principal`; undefined when it sent none. */
  readonly idempotencyKey: string | undefined
  /** The signed transaction's hash: what identifies the payment. */
  readonly paymentId: PaymentId
  /** Hash of what was asked of the payment: its id and the requirements. */
  readonly requestHash: string
  readonly principal: PrincipalId
  readonly payer: string
  readonly network: string
  readonly scheme: string
  readonly asset: string
  readonly payTo: string
  readonly amount: string
  readonly worstCaseUnits: bigint
  readonly feeStroops: bigint
  /** The payer's Soroban authorisation (nonce, expiration ledger): what reconciliation reads the ledger for. */
  readonly authorization: { readonly nonce: string; readonly expirationLedger: number } | null
}

/** One journal entry as stored: what was reserved, and how it ended. */
export interface JournalEntry extends Omit<NewEntry, "idempotencyKey" | "payer"> {
  /** The key as the client sent it; the payment id when it sent none. */
  readonly idempotencyKey: string
  /** The payer the facilitator reported, else the transfer's `from`. */
  readonly payer: string | null
  readonly state: SettlementState
  readonly backendId: string | null
  readonly transaction: string | null
  readonly errors: BackendErrors
  readonly answer: StoredAnswer | null
  readonly createdAtMs: number
  readonly updatedAtMs: number
}

/** An entry found for a request: by the principal's idempotency key (`byKey`), else by the payment. */
export interface FoundEntry {
  readonly entry: JournalEntry
  readonly byKey: boolean
}

/** What the journal holds inside the rolling window, read in the same transaction that reserves. */
export interface WindowUsage {
  /** Worst-case spend of this principal's settlements that were not refused or failed, base units. */
  readonly principalSpendUnits: bigint
  readonly globalFeeStroops: bigint
  readonly principalFeeStroops: bigint
  /** Creation times (epoch ms) of the oldest reservation in the window, globally and for the principal. */
  readonly oldestGlobalMs: number | null
  readonly oldestPrincipalMs: number | null
}

/**
 * What a reservation found:
 * - Reserved: entry `id` is in the journal as `pending`, its spend and fee counted. It is a new
 *   entry, or a released one (see `mayReserveAgain`) taken up again.
 * - Existing: the idempotency key or the signed payment is already journaled; nothing was written.
 * - Refused: the budgets refused it; nothing was written.
 */
export type Reservation<Refusal> =
  | { readonly _tag: "Reserved"; readonly id: SettlementId }
  | ({ readonly _tag: "Existing" } & FoundEntry)
  | { readonly _tag: "Refused"; readonly error: Refusal }

export interface Completion {
  /** `pending` only with a backend's `settlement_pending` answer and its transaction. */
  readonly state: SettlementState
  /** Why it ended so, as the entry's history shows it. */
  readonly reason: string
  /**
   * Whether any backend received the settle. One that never left (no backend healthy, all
   * unreachable, none supporting the kind) releases its fee reservation: nothing was sponsored.
   */
  readonly submitted: boolean
  readonly backendId: string | null
  readonly transaction: string | null
  readonly payer: string | null
  readonly errors: BackendErrors
  readonly answer: StoredAnswer
}

/** What reconciliation proved on the ledger about an unresolved entry. */
export type ReconcileOutcome =
  | {
      readonly _tag: "Settled"
      readonly transaction: string | null
      readonly reason: string
      /** The settle answer a repeat of the payment is given from now on, as a facilitator's success would read. */
      readonly answer: {
        readonly success: true
        readonly transaction: string
        readonly network: string
        readonly payer?: string
      }
    }
  | { readonly _tag: "Unpaid"; readonly reason: string }

/** One change of an entry's state, with its reason: `from` is null for the reservation itself. */
export interface SettlementTransition {
  readonly from: SettlementState | null
  readonly to: SettlementState
  readonly reason: string
  readonly atMs: number
}

/**
 * An entry released because no backend holds it: `failed` with no fee charged, because it never
 * reached one or because reconciliation proved on the ledger that it was never paid. It holds
 * nothing to reconcile, so the same signed payment may be settled again on it, at any backend.
 */
const isReleased = (entry: JournalEntry) => entry.state === "failed" && entry.feeStroops === 0n

/**
 * Whether a request that found `found` goes through the pipeline again instead of getting the
 * stored answer: the entry was released, and it is this request's own (by payment, or under the
 * same key for the same request; a key used for another request stays a conflict).
 */
export const mayReserveAgain = (found: FoundEntry, requestHash: string): boolean =>
  isReleased(found.entry) && (!found.byKey || found.entry.requestHash === requestHash)

/** The x402 (2.20+) reason of a backend that broadcast the payment but has not seen it confirmed. */
export const SETTLEMENT_PENDING = "settlement_pending"

/**
 * A settle answer that is not a decline: the backend submitted `transaction` and its outcome is
 * still open. Without a transaction there is nothing to follow, so it is an ordinary refusal.
 */
export const isPendingAnswer = (answer: {
  readonly success: boolean
  readonly errorReason?: string | undefined
  readonly transaction: string
}) => !answer.success && answer.errorReason === SETTLEMENT_PENDING && answer.transaction !== ""

/**
 * An entry a backend answered `settlement_pending` for: `pending` with the backend's transaction.
 * An entry still in flight is `pending` without one (no backend has answered yet).
 */
export const awaitsConfirmation = (entry: Pick<JournalEntry, "state" | "transaction" | "backendId">) =>
  entry.state === "pending" && entry.transaction !== null && entry.backendId !== null
