import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type BudgetLimits, type BudgetRefusal, judgeBudgets, windowStartMs } from "../domain/budgets.js"
import { PrincipalId, type SettlementId } from "../domain/ids.js"
import {
  type Completion,
  type FoundEntry,
  type JournalEntry,
  mayReserveAgain,
  type NewEntry,
  type ReconcileOutcome,
  type Reservation,
  type SettlementTransition
} from "../domain/settlements.js"
import { takeBudgetLock, usageSince, writeReservation } from "./journalBudget.js"
import { reconcilerQueries } from "./journalReconcile.js"
import { decodeJournal, decodeTransitions, storedKey, toEntry, transition } from "./journalRows.js"
import { atBoundary, decodeRows, repository, SqlBigInt } from "./repository.js"
import { StoreTransactions } from "./StoreTransactions.js"
import { sortableId } from "./sortableId.js"

/** The durable settlement journal and the budget reservations it carries. */
export interface SettlementJournalShape {
  /**
   * Idempotency lookup, `checks`, the budgets (`judgeBudgets` over the window ending at `nowMs`)
   * and the `pending` insert in one transaction that first takes the budget lock row: concurrent
   * reservations (other fibers, other connections, other processes on the same database) run one
   * after another, so the sums judged are never stale and the budgets cannot be overspent.
   * `checks` run after a repeat was answered and before the budgets; a failure rolls the
   * transaction back. Generic in what `checks` fail with, so it is wrapped with `atBoundary`
   * itself rather than listed in `repository` below.
   */
  readonly reserve: <E, R>(
    entry: NewEntry,
    budgets: BudgetLimits,
    nowMs: number,
    checks: Effect.Effect<void, E, R>
  ) => Effect.Effect<Reservation<BudgetRefusal>, E, R>
  /**
   * The entry journaled under this principal's idempotency key, else the one for this signed
   * payment, whoever submitted it: one payment is settled once. `byKey` is true only when the
   * client's own key matched.
   */
  readonly find: (
    entry: Pick<NewEntry, "idempotencyKey" | "principal" | "paymentId">
  ) => Effect.Effect<Option.Option<FoundEntry>>
  /**
   * Records how a settlement ended. An entry that crash recovery (of this or another instance
   * sharing the database) marked indeterminate while it was in flight still takes its real
   * outcome. One a backend may have submitted stays charged at the fee ceiling whatever it cost
   * (SPEC Limits 2); one that was never submitted releases its reservation.
   */
  readonly complete: (id: SettlementId, completion: Completion, nowMs: number) => Effect.Effect<void>
  /**
   * A further backend is about to receive a `pending` entry's payload (settle failover): under the
   * budget lock, the fee budgets are judged on the window's usage (this entry's fee included) plus
   * one more fee ceiling, with no new spend; if they hold, the attempt is recorded in its history
   * and charged that ceiling. `Charged`, `Refused` with the budget's refusal, or `NotPending` when
   * the entry moved on.
   */
  readonly attempt: (
    id: SettlementId,
    attempt: { readonly reason: string; readonly nowMs: number },
    budgets: BudgetLimits
  ) => Effect.Effect<
    | { readonly _tag: "Charged" }
    | { readonly _tag: "NotPending" }
    | { readonly _tag: "Refused"; readonly error: BudgetRefusal }
  >
  /**
   * Ends an unresolved entry (`indeterminate`, or `pending` on a backend's `settlement_pending`
   * answer) with what the ledger proved: settled, with the transaction when one was found; or
   * unpaid, which releases its fee reservation so the same payment may be settled again. False
   * when the entry was no longer unresolved.
   */
  readonly reconcile: (id: SettlementId, outcome: ReconcileOutcome, nowMs: number) => Effect.Effect<boolean>
  /**
   * Unresolved entries that carry an authorisation to look for on the ledger, in id order after
   * `afterId` (from the first when null): a caller walking the set with the last id it saw visits
   * every entry in turn, however many it cannot decide yet.
   */
  readonly unresolved: (limit: number, afterId: SettlementId | null) => Effect.Effect<Array<JournalEntry>>
  /** Every change of an entry's state, oldest first. */
  readonly history: (id: SettlementId) => Effect.Effect<Array<SettlementTransition>>
  readonly get: (id: SettlementId) => Effect.Effect<Option.Option<JournalEntry>>
  /** Newest first, optionally one state, one principal, and only entries created before `beforeMs`. */
  readonly list: (filter: {
    readonly state?: string
    readonly principal?: PrincipalId
    readonly beforeMs?: number
    readonly limit: number
  }) => Effect.Effect<Array<JournalEntry>>
  /** Entries per state: the journal gauge and the status page's counts. */
  readonly countsByState: () => Effect.Effect<ReadonlyMap<string, number>>
  /**
   * All principals' reservations since `sinceMs`: fee reserved (what the global budget counts) and
   * worst-case spend of entries that did not fail (what spend windows count), in base units.
   */
  readonly windowTotals: (
    sinceMs: number
  ) => Effect.Effect<{ readonly feeStroops: bigint; readonly spendUnits: bigint }>
  /**
   * Crash recovery: an entry still `pending` without a transaction at start was interrupted
   * between forwarding and answer, so whether it settled is unknown. It becomes `indeterminate`
   * and is never re-submitted. One with a transaction had a backend's `settlement_pending`
   * answer: it stays `pending`, for a retry or the reconciler to resolve.
   */
  readonly recoverPending: (nowMs: number) => Effect.Effect<Array<string>>
}

export class SettlementJournal extends Context.Tag("sextant/SettlementJournal")<
  SettlementJournal,
  SettlementJournalShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(SettlementJournal, make))
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { transaction } = yield* StoreTransactions

  const find = (entry: Pick<NewEntry, "principal" | "idempotencyKey" | "paymentId">) =>
    Effect.gen(function* () {
      const key = storedKey(entry)
      const rows =
        yield* sql`SELECT * FROM settlements WHERE idempotency_key = ${key} OR payment_hash = ${entry.paymentId}`.pipe(
          Effect.flatMap(decodeJournal)
        )
      const byKey = entry.idempotencyKey === undefined ? undefined : rows.find((r) => r.idempotency_key === key)
      const row = byKey ?? rows.find((r) => r.payment_hash === entry.paymentId) ?? rows[0]
      return row === undefined
        ? Option.none<FoundEntry>()
        : Option.some<FoundEntry>({ entry: toEntry(row), byKey: byKey !== undefined })
    })

  const reserve = <E, R>(entry: NewEntry, budgets: BudgetLimits, nowMs: number, checks: Effect.Effect<void, E, R>) =>
    atBoundary(
      "SettlementJournal.reserve",
      transaction(
        Effect.gen(function* () {
          yield* takeBudgetLock(sql)
          const existing = yield* find(entry)
          if (Option.isSome(existing) && !mayReserveAgain(existing.value, entry.requestHash)) {
            return { _tag: "Existing", ...existing.value } satisfies Reservation<BudgetRefusal>
          }
          yield* checks
          const usage = yield* usageSince(sql, entry.principal, windowStartMs(budgets, nowMs))
          const refusal = judgeBudgets(usage, entry, budgets, nowMs)
          if (refusal !== undefined) return { _tag: "Refused", error: refusal } satisfies Reservation<BudgetRefusal>

          const id = yield* writeReservation(
            sql,
            entry,
            Option.map(existing, (e) => e.entry.id),
            nowMs
          )
          return { _tag: "Reserved", id } satisfies Reservation<BudgetRefusal>
        })
      )
    )

  const methods = repository("SettlementJournal", {
    find,
    complete: (id: SettlementId, completion: Completion, nowMs: number) =>
      Effect.gen(function* () {
        // The transition is written first, from the state it replaces: a write as the transaction's
        // first statement takes SQLite's write lock at once (a read first could not upgrade under a
        // second process's writes).
        yield* sql`INSERT INTO settlement_transitions (id, settlement_id, from_state, to_state, reason, at_ms)
          SELECT ${sortableId("st", nowMs)}, id, state, ${completion.state}, ${completion.reason}, ${nowMs}
          FROM settlements WHERE id = ${id} AND state IN ('pending', 'indeterminate')`
        yield* sql`UPDATE settlements SET state = ${completion.state}, backend_id = ${completion.backendId},
            fee_stroops = ${completion.submitted ? sql`fee_stroops` : 0},
            transaction_hash = ${completion.transaction}, payer = COALESCE(${completion.payer}, payer),
            errors_json = ${JSON.stringify(completion.errors)}, answer_status = ${completion.answer.status},
            answer_json = ${JSON.stringify(completion.answer.body)}, updated_at_ms = ${nowMs}
          WHERE id = ${id} AND state IN ('pending', 'indeterminate')`
      }).pipe(transaction),
    attempt: (
      id: SettlementId,
      { reason, nowMs }: { readonly reason: string; readonly nowMs: number },
      budgets: BudgetLimits
    ) =>
      Effect.gen(function* () {
        // The lock row first, as a reservation takes it: the sums judged are not stale.
        yield* takeBudgetLock(sql)
        const [row] = yield* sql<{
          principal: string
        }>`SELECT principal FROM settlements WHERE id = ${id} AND state = 'pending'`
        if (row === undefined) return { _tag: "NotPending" } as const
        const usage = yield* usageSince(sql, PrincipalId.make(row.principal), windowStartMs(budgets, nowMs))
        const refusal = judgeBudgets(usage, { worstCaseUnits: 0n }, budgets, nowMs)
        if (refusal !== undefined) return { _tag: "Refused", error: refusal } as const
        yield* sql`UPDATE settlements SET fee_stroops = fee_stroops + ${budgets.feeCeilingStroops}, updated_at_ms = ${nowMs} WHERE id = ${id}`
        yield* transition(sql, id, "pending", "pending", reason, nowMs)
        return { _tag: "Charged" } as const
      }).pipe(transaction),
    ...reconcilerQueries(sql, transaction),
    history: (id: SettlementId) =>
      sql`SELECT from_state, to_state, reason, at_ms FROM settlement_transitions WHERE settlement_id = ${id}
        ORDER BY at_ms, id`.pipe(
        Effect.flatMap(decodeTransitions),
        Effect.map((rows) =>
          rows.map(
            (r): SettlementTransition => ({ from: r.from_state, to: r.to_state, reason: r.reason, atMs: r.at_ms })
          )
        )
      ),
    get: (id: SettlementId) =>
      sql`SELECT * FROM settlements WHERE id = ${id}`.pipe(
        Effect.flatMap(decodeJournal),
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toEntry))
      ),
    list: (filter: { state?: string; principal?: PrincipalId; beforeMs?: number; limit: number }) =>
      sql`SELECT * FROM settlements WHERE ${sql.and([
        ...(filter.state !== undefined ? [sql`state = ${filter.state}`] : []),
        ...(filter.principal !== undefined ? [sql`principal = ${filter.principal}`] : []),
        ...(filter.beforeMs !== undefined ? [sql`created_at_ms < ${filter.beforeMs}`] : [])
      ])} ORDER BY created_at_ms DESC, id DESC LIMIT ${filter.limit}`.pipe(
        Effect.flatMap(decodeJournal),
        Effect.map((rows) => rows.map(toEntry))
      ),
    countsByState: () =>
      sql<{ state: string; n: unknown }>`SELECT state, COUNT(*) AS n FROM settlements GROUP BY state`.pipe(
        Effect.map(
          (rows) => new Map(rows.map((r) => [String(r.state), Number(r.n)] as const)) as ReadonlyMap<string, number>
        )
      ),
    windowTotals: (sinceMs: number) =>
      sql`SELECT SUM(fee_stroops) AS global_fee, SUM(CASE WHEN state <> 'failed' THEN worst_case_units ELSE 0 END) AS spend
        FROM settlements WHERE created_at_ms > ${sinceMs}`.pipe(
        Effect.flatMap(
          decodeRows(Schema.Struct({ global_fee: Schema.NullOr(SqlBigInt), spend: Schema.NullOr(SqlBigInt) }))
        ),
        Effect.map(([row]) => ({ feeStroops: row?.global_fee ?? 0n, spendUnits: row?.spend ?? 0n }))
      )
  })
  return { ...methods, reserve }
})
