import { SqlClient, type SqlError } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { BudgetsConfig } from "../config.js"
import type { PolicyDenied, TooManyRequests } from "../domain/errors.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import type { SettlementRecord } from "../domain/x402.js"
import { judgeBudgets } from "./budgets.js"

export type SettlementState = SettlementRecord["state"]

/** Every backend's error, in the order they were met. */
export type BackendErrors = ReadonlyArray<{ readonly backendId: string; readonly error: string }>

/** The answer given to the first request, replayed to repeats: an HTTP status and its JSON body. */
export interface StoredAnswer {
  readonly status: number
  readonly body: unknown
}

export interface NewEntry {
  readonly id: string
  /** The client's key (the payment id when it sent none); stored scoped to `principal`. */
  readonly idempotencyKey: string
  /** The signed transaction's hash (see `decodePayment`), kept in the `payment_hash` column. */
  readonly paymentId: string
  /** Hash of what was asked of the payment: its id and the requirements. */
  readonly requestHash: string
  readonly principal: string
  readonly payer: string
  readonly network: string
  readonly scheme: string
  readonly asset: string
  readonly payTo: string
  readonly amount: string
  readonly worstCaseUnits: bigint
  readonly feeStroops: bigint
}

export interface JournalRow {
  readonly id: string
  readonly idempotency_key: string
  readonly payment_hash: string
  readonly request_hash: string
  readonly state: SettlementState
  readonly principal: string
  readonly payer: string | null
  readonly network: string
  readonly scheme: string
  readonly asset: string
  readonly pay_to: string
  readonly amount: string
  readonly worst_case_units: number | string
  readonly fee_stroops: number | string
  readonly backend_id: string | null
  readonly transaction_hash: string | null
  readonly errors_json: string
  readonly answer_status: number | null
  readonly answer_json: string | null
  readonly created_at_ms: number | string
  readonly updated_at_ms: number | string
}

/**
 * What a reservation found:
 * - Reserved: the entry is in the journal as `pending`, its spend and fee counted.
 * - Existing: the idempotency key or the signed payment is already journaled (`byKey` says which
 *   matched first); nothing was written.
 * - Refused: a window or fee budget would be exceeded; nothing was written.
 */
export type Reservation =
  | { readonly _tag: "Reserved" }
  | { readonly _tag: "Existing"; readonly row: JournalRow; readonly byKey: boolean }
  | { readonly _tag: "Refused"; readonly error: PolicyDenied | TooManyRequests }

export interface Completion {
  readonly state: Exclude<SettlementState, "pending">
  readonly backendId: string | null
  readonly transaction: string | null
  readonly payer: string | null
  readonly errors: BackendErrors
  readonly answer: StoredAnswer
}

/**
 * Idempotency keys belong to a principal: the same key from two principals is two requests. The
 * unique `idempotency_key` column holds the key scoped as the JSON pair [principal, key].
 */
const scopedKey = (principal: string, key: string) => JSON.stringify([principal, key])

/** The client's key out of a stored one; a stored key that is not such a pair is shown as it is. */
const clientKey = (stored: string): string => {
  try {
    const pair: unknown = JSON.parse(stored)
    if (Array.isArray(pair) && pair.length === 2 && typeof pair[1] === "string") return pair[1]
  } catch {
    // not a scoped pair
  }
  return stored
}

const toNumber = (value: number | string | null) => (value === null ? null : Number(value))

export const storedAnswer = (row: JournalRow): StoredAnswer | null =>
  row.answer_status === null || row.answer_json === null
    ? null
    : { status: Number(row.answer_status), body: JSON.parse(row.answer_json) as unknown }

export const toRecord = (row: JournalRow, decimals: number): SettlementRecord => ({
  id: row.id,
  idempotencyKey: clientKey(row.idempotency_key),
  state: row.state,
  principal: row.principal,
  network: row.network,
  scheme: row.scheme,
  payTo: row.pay_to,
  amount: row.amount,
  worstCaseUsd: baseUnitsToUsd(String(row.worst_case_units), decimals),
  backendId: row.backend_id,
  transaction: row.transaction_hash,
  payer: row.payer,
  errors: JSON.parse(row.errors_json) as BackendErrors,
  createdAt: new Date(Number(row.created_at_ms)).toISOString(),
  updatedAt: new Date(Number(row.updated_at_ms)).toISOString()
})

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /**
   * The entry journaled under this principal's idempotency key, else the one for this signed
   * payment, whoever submitted it: one payment is settled once.
   */
  const find = (principal: string, idempotencyKey: string, paymentId: string) => {
    const scoped = scopedKey(principal, idempotencyKey)
    return sql<JournalRow>`SELECT * FROM settlements WHERE idempotency_key = ${scoped} OR payment_hash = ${paymentId}`.pipe(
      Effect.map((rows) => {
        const byKey = rows.find((r) => r.idempotency_key === scoped)
        const row = byKey ?? rows[0]
        return row === undefined ? Option.none() : Option.some({ row, byKey: byKey !== undefined })
      })
    )
  }

  /**
   * Idempotency lookup, budget checks and the `pending` insert in one transaction that first takes
   * the budget lock row: concurrent reservations (other fibers, other connections, other
   * processes on the same database) run one after another, so the sums they check are never stale
   * and the budgets cannot be overspent.
   */
  const reserve = (
    entry: NewEntry,
    budgets: BudgetsConfig,
    decimals: number,
    nowMs: number
  ): Effect.Effect<Reservation, SqlError.SqlError> =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`UPDATE settlement_budget_lock SET version = version + 1 WHERE id = 1`
        const existing = yield* find(entry.principal, entry.idempotencyKey, entry.paymentId)
        if (Option.isSome(existing)) return { _tag: "Existing", ...existing.value } satisfies Reservation

        const since = nowMs - budgets.windowSeconds * 1000
        const [usage] = yield* sql<{
          spend: number | string | null
          global_fee: number | string | null
          principal_fee: number | string | null
          oldest_global: number | string | null
          oldest_principal: number | string | null
        }>`SELECT
            SUM(CASE WHEN principal = ${entry.principal} AND state <> 'failed' THEN worst_case_units ELSE 0 END) AS spend,
            SUM(fee_stroops) AS global_fee,
            SUM(CASE WHEN principal = ${entry.principal} THEN fee_stroops ELSE 0 END) AS principal_fee,
            MIN(created_at_ms) AS oldest_global,
            MIN(CASE WHEN principal = ${entry.principal} THEN created_at_ms END) AS oldest_principal
          FROM settlements WHERE created_at_ms > ${since}`
        const refusal = judgeBudgets(
          {
            principalSpendUnits: BigInt(usage?.spend ?? 0),
            globalFeeStroops: BigInt(usage?.global_fee ?? 0),
            principalFeeStroops: BigInt(usage?.principal_fee ?? 0),
            oldestGlobalMs: toNumber(usage?.oldest_global ?? null),
            oldestPrincipalMs: toNumber(usage?.oldest_principal ?? null)
          },
          entry,
          budgets,
          decimals,
          nowMs
        )
        if (refusal) return { _tag: "Refused", error: refusal } satisfies Reservation

        yield* sql`INSERT INTO settlements (id, idempotency_key, payment_hash, request_hash, state, principal, payer,
            network, scheme, asset, pay_to, amount, worst_case_units, fee_stroops, errors_json, created_at_ms, updated_at_ms)
          VALUES (${entry.id}, ${scopedKey(entry.principal, entry.idempotencyKey)}, ${entry.paymentId}, ${entry.requestHash}, 'pending',
            ${entry.principal}, ${entry.payer}, ${entry.network}, ${entry.scheme}, ${entry.asset}, ${entry.payTo},
            ${entry.amount}, ${Number(entry.worstCaseUnits)}, ${Number(entry.feeStroops)}, '[]', ${nowMs}, ${nowMs})`
        return { _tag: "Reserved" } satisfies Reservation
      })
    )

  /**
   * Records how a settlement ended. An entry that crash recovery (of this or another instance
   * sharing the database) marked indeterminate while it was in flight still takes its real outcome.
   */
  const complete = (id: string, completion: Completion, nowMs: number) =>
    sql`UPDATE settlements SET state = ${completion.state}, backend_id = ${completion.backendId},
        transaction_hash = ${completion.transaction}, payer = COALESCE(${completion.payer}, payer),
        errors_json = ${JSON.stringify(completion.errors)}, answer_status = ${completion.answer.status},
        answer_json = ${JSON.stringify(completion.answer.body)}, updated_at_ms = ${nowMs}
      WHERE id = ${id} AND state IN ('pending', 'indeterminate')`.pipe(Effect.asVoid)

  return {
    find,
    reserve,
    complete,
    get: (id: string) =>
      sql<JournalRow>`SELECT * FROM settlements WHERE id = ${id}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    /**
     * Crash recovery: an entry still `pending` at start was interrupted between forwarding and
     * answer, so whether it settled is unknown. It becomes `indeterminate` and is never re-submitted.
     */
    recoverPending: (nowMs: number) =>
      sql<{ id: string }>`UPDATE settlements SET state = 'indeterminate', updated_at_ms = ${nowMs}
        WHERE state = 'pending' RETURNING id`.pipe(Effect.map((rows) => rows.map((r) => r.id)))
  }
})

/** The durable settlement journal and the budget reservations it carries. */
export class SettlementJournal extends Context.Tag("sextant/SettlementJournal")<
  SettlementJournal,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(SettlementJournal, make)
}
