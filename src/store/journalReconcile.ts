import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { SettlementId } from "../domain/ids.js"
import type { ReconcileOutcome } from "../domain/settlements.js"
import { decodeIds, decodeJournal, toEntry, transition } from "./journalRows.js"
import type { StoreTransactionsShape } from "./StoreTransactions.js"
import { sortableId } from "./sortableId.js"

/**
 * The journal's queries for entries whose outcome is not known from a backend: the reconciler's
 * (`reconcile`, `unresolved`) and crash recovery's (`recoverPending`). Their contracts are on
 * `SettlementJournalShape`.
 */
export const reconcilerQueries = (sql: SqlClient.SqlClient, transaction: StoreTransactionsShape["transaction"]) => {
  /** Entries whose outcome the ledger settles: `indeterminate`, and `pending` on a backend's pending answer (`awaitsConfirmation`). */
  const UNRESOLVED = sql.literal("(state = 'indeterminate' OR (state = 'pending' AND transaction_hash IS NOT NULL))")
  return {
    reconcile: (id: SettlementId, outcome: ReconcileOutcome, nowMs: number) =>
      Effect.gen(function* () {
        yield* sql`INSERT INTO settlement_transitions (id, settlement_id, from_state, to_state, reason, at_ms)
          SELECT ${sortableId("st", nowMs)}, id, state, ${outcome._tag === "Settled" ? "settled" : "failed"}, ${outcome.reason}, ${nowMs}
          FROM settlements WHERE id = ${id} AND ${UNRESOLVED}`
        const updated =
          outcome._tag === "Settled"
            ? yield* sql<{ id: string }>`UPDATE settlements SET state = 'settled',
                transaction_hash = COALESCE(${outcome.transaction}, transaction_hash), answer_status = 200,
                answer_json = ${JSON.stringify(outcome.answer)}, updated_at_ms = ${nowMs}
              WHERE id = ${id} AND ${UNRESOLVED} RETURNING id`
            : yield* sql<{ id: string }>`UPDATE settlements SET state = 'failed', fee_stroops = 0, answer_status = NULL,
                answer_json = NULL, updated_at_ms = ${nowMs}
              WHERE id = ${id} AND ${UNRESOLVED} RETURNING id`
        return updated.length > 0
      }).pipe(transaction),
    unresolved: (limit: number, afterId: SettlementId | null) =>
      sql`SELECT * FROM settlements WHERE ${UNRESOLVED} AND auth_nonce IS NOT NULL
        ${afterId === null ? sql`` : sql`AND id > ${afterId}`} ORDER BY id LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeJournal),
        Effect.map((rows) => rows.map(toEntry))
      ),
    recoverPending: (nowMs: number) =>
      Effect.gen(function* () {
        const rows = yield* sql`UPDATE settlements SET state = 'indeterminate', updated_at_ms = ${nowMs}
          WHERE state = 'pending' AND transaction_hash IS NULL RETURNING id`.pipe(Effect.flatMap(decodeIds))
        for (const { id } of rows) {
          yield* transition(
            sql,
            id,
            "pending",
            "indeterminate",
            "interrupted by a restart before its outcome was recorded",
            nowMs
          )
        }
        return rows.map((r) => r.id)
      }).pipe(transaction)
  }
}
