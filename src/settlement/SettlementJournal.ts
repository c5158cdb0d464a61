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
  /** The client's `Idempotency-Key`, stored scoped to `principal`; undefined when it sent none. */
  readonly idempotencyKey: string | undefined
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
 * - Reserved: entry `id` is in the journal as `pending`, its spend and fee counted. It is a new
 *   entry, or a released one (see `mayReserveAgain`) taken up again.
 * - Existing: the idempotency key or the signed payment is already journaled (`byKey` says which
 *   matched first); nothing was written.
 * - Refused: a window or fee budget would be exceeded; nothing was written.
 */
export type Reservation =
  | { readonly _tag: "Reserved"; readonly id: string }
  | { readonly _tag: "Existing"; readonly row: JournalRow; readonly byKey: boolean }
  | { readonly _tag: "Refused"; readonly error: PolicyDenied | TooManyRequests }

export interface Completion {
  readonly state: Exclude<SettlementState, "pending">
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

/**
 * Idempotency keys belong to a principal: the same key from two principals is two requests. The
 * unique `idempotency_key` column holds a client's key as the JSON pair [principal, key]; a
 * request without one is keyed by its payment alone, as [paymentId] (payment ids are unique
 * across principals anyway), which no client key can collide with.
 */
const storedKey = (entry: Pick<NewEntry, "principal" | "idempotencyKey" | "paymentId">) =>
  JSON.stringify(entry.idempotencyKey === undefined ? [entry.paymentId] : [entry.principal, entry.idempotencyKey])

/** The key as the client knows it (the payment id when it sent none); anything else is shown as stored. */
const clientKey = (stored: string): string => {
  try {
    const parts: unknown = JSON.parse(stored)
    const key: unknown = Array.isArray(parts) ? parts.at(-1) : undefined
    if (typeof key === "string") return key
  } catch {
    // not a stored pair
  }
  return stored
}

/**
 * An entry released because it never reached a backend: `failed` with no fee charged. It holds
 * nothing to reconcile, so the same signed payment may be settled again on it.
 */
const isReleased = (row: JournalRow) => row.state === "failed" && Number(row.fee_stroops) === 0

/**
 * Whether a request that found `found` goes through the pipeline again instead of getting the
 * stored answer: the entry was released, and it is this request's own (by payment, or under the
 * same key for the same request; a key used for another request stays a conflict).
 */
export const mayReserveAgain = (found: { readonly row: JournalRow; readonly byKey: boolean }, requestHash: string): boolean =>
  isReleased(found.row) && (!found.byKey || found.row.request_hash === requestHash)

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
   * payment, whoever submitted it: one payment is settled once. `byKey` is true only when the
   * client's own key matched.
   */
  const find = (entry: Pick<NewEntry, "principal" | "idempotencyKey" | "paymentId">) => {
    const key = storedKey(entry)
    return sql<JournalRow>`SELECT * FROM settlements WHERE idempotency_key = ${key} OR payment_hash = ${entry.paymentId}`.pipe(
      Effect.map((rows) => {
        const byKey = entry.idempotencyKey === undefined ? undefined : rows.find((r) => r.idempotency_key === key)
        const row = byKey ?? rows.find((r) => r.payment_hash === entry.paymentId) ?? rows[0]
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
        const existing = yield* find(entry)
        if (Option.isSome(existing) && !mayReserveAgain(existing.value, entry.requestHash)) {
          return { _tag: "Existing", ...existing.value } satisfies Reservation
        }

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
            MIN(CASE WHEN fee_stroops > 0 THEN created_at_ms END) AS oldest_global,
            MIN(CASE WHEN principal = ${entry.principal} AND fee_stroops > 0 THEN created_at_ms END) AS oldest_principal
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

        if (Option.isSome(existing)) {
          // A released entry is taken up again as this request's: its earlier attempt sent nothing.
          const id = existing.value.row.id
          yield* sql`UPDATE settlements SET idempotency_key = ${storedKey(entry)}, request_hash = ${entry.requestHash},
              state = 'pending', principal = ${entry.principal}, payer = ${entry.payer}, network = ${entry.network},
              scheme = ${entry.scheme}, asset = ${entry.asset}, pay_to = ${entry.payTo}, amount = ${entry.amount},
              worst_case_units = ${Number(entry.worstCaseUnits)}, fee_stroops = ${Number(entry.feeStroops)},
              backend_id = NULL, transaction_hash = NULL, errors_json = '[]', answer_status = NULL, answer_json = NULL,
              created_at_ms = ${nowMs}, updated_at_ms = ${nowMs}
            WHERE id = ${id}`
          return { _tag: "Reserved", id } satisfies Reservation
        }
        yield* sql`INSERT INTO settlements (id, idempotency_key, payment_hash, request_hash, state, principal, payer,
            network, scheme, asset, pay_to, amount, worst_case_units, fee_stroops, errors_json, created_at_ms, updated_at_ms)
          VALUES (${entry.id}, ${storedKey(entry)}, ${entry.paymentId}, ${entry.requestHash}, 'pending',
            ${entry.principal}, ${entry.payer}, ${entry.network}, ${entry.scheme}, ${entry.asset}, ${entry.payTo},
            ${entry.amount}, ${Number(entry.worstCaseUnits)}, ${Number(entry.feeStroops)}, '[]', ${nowMs}, ${nowMs})`
        return { _tag: "Reserved", id: entry.id } satisfies Reservation
      })
    )

  /**
   * Records how a settlement ended. An entry that crash recovery (of this or another instance
   * sharing the database) marked indeterminate while it was in flight still takes its real outcome.
   * One that reached a backend stays charged at the fee ceiling whatever it cost (SPEC Limits 2);
   * one that never did releases its reservation.
   */
  const complete = (id: string, completion: Completion, nowMs: number) =>
    sql`UPDATE settlements SET state = ${completion.state}, backend_id = ${completion.backendId},
        fee_stroops = ${completion.submitted ? sql`fee_stroops` : 0},
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
    /** Newest first, optionally one state, one principal, and only entries created before `beforeMs`. */
    list: (filter: { state?: string; principal?: string; beforeMs?: number; limit: number }) =>
      sql<JournalRow>`SELECT * FROM settlements WHERE ${sql.and([
        ...(filter.state !== undefined ? [sql`state = ${filter.state}`] : []),
        ...(filter.principal !== undefined ? [sql`principal = ${filter.principal}`] : []),
        ...(filter.beforeMs !== undefined ? [sql`created_at_ms < ${filter.beforeMs}`] : [])
      ])} ORDER BY created_at_ms DESC, id DESC LIMIT ${filter.limit}`,
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
