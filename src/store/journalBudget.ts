import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { PrincipalId, SettlementId } from "../domain/ids.js"
import type { NewEntry, WindowUsage } from "../domain/settlements.js"
import { decodeUsage, storedKey, transition } from "./journalRows.js"

/**
 * The journal's budget queries. Every reservation and further attempt first takes the budget lock
 * row, so concurrent ones (other fibers, connections or processes on the database) run one after
 * another and the window sums they judge are never stale.
 */
export const takeBudgetLock = (sql: SqlClient.SqlClient) =>
  sql`UPDATE settlement_budget_lock SET version = version + 1 WHERE id = 1`

/** The principal's spend and the fees reserved in the window since `sinceMs`, globally and by the principal. */
export const usageSince = (sql: SqlClient.SqlClient, principal: PrincipalId, sinceMs: number) =>
  sql`SELECT
      SUM(CASE WHEN principal = ${principal} AND state <> 'failed' THEN worst_case_units ELSE 0 END) AS spend,
      SUM(fee_stroops) AS global_fee,
      SUM(CASE WHEN principal = ${principal} THEN fee_stroops ELSE 0 END) AS principal_fee,
      MIN(CASE WHEN fee_stroops > 0 THEN created_at_ms END) AS oldest_global,
      MIN(CASE WHEN principal = ${principal} AND fee_stroops > 0 THEN created_at_ms END) AS oldest_principal
    FROM settlements WHERE created_at_ms > ${sinceMs}`.pipe(
    Effect.flatMap(decodeUsage),
    Effect.map(
      ([usage]): WindowUsage => ({
        principalSpendUnits: usage?.spend ?? 0n,
        globalFeeStroops: usage?.global_fee ?? 0n,
        principalFeeStroops: usage?.principal_fee ?? 0n,
        oldestGlobalMs: usage?.oldest_global ?? null,
        oldestPrincipalMs: usage?.oldest_principal ?? null
      })
    )
  )

/**
 * Writes the `pending` entry of a reservation: a new row, or a released entry (`released`) taken up
 * again as this request's, since its earlier attempt sent nothing. The id reserved.
 */
export const writeReservation = (
  sql: SqlClient.SqlClient,
  entry: NewEntry,
  released: Option.Option<SettlementId>,
  nowMs: number
) =>
  Effect.gen(function* () {
    if (Option.isSome(released)) {
      const id = released.value
      yield* sql`UPDATE settlements SET idempotency_key = ${storedKey(entry)}, request_hash = ${entry.requestHash},
          state = 'pending', principal = ${entry.principal}, payer = ${entry.payer}, network = ${entry.network},
          scheme = ${entry.scheme}, asset = ${entry.asset}, pay_to = ${entry.payTo}, amount = ${entry.amount},
          worst_case_units = ${Number(entry.worstCaseUnits)}, fee_stroops = ${Number(entry.feeStroops)},
          backend_id = NULL, transaction_hash = NULL, errors_json = '[]', answer_status = NULL, answer_json = NULL,
          auth_nonce = ${entry.authorization?.nonce ?? null},
          auth_expiration_ledger = ${entry.authorization?.expirationLedger ?? null},
          created_at_ms = ${nowMs}, updated_at_ms = ${nowMs}
        WHERE id = ${id}`
      yield* transition(
        sql,
        id,
        "failed",
        "pending",
        "reserved again: the earlier attempt is known not to have paid",
        nowMs
      )
      return id
    }
    yield* sql`INSERT INTO settlements (id, idempotency_key, payment_hash, request_hash, state, principal, payer,
        network, scheme, asset, pay_to, amount, worst_case_units, fee_stroops, errors_json, auth_nonce,
        auth_expiration_ledger, created_at_ms, updated_at_ms)
      VALUES (${entry.id}, ${storedKey(entry)}, ${entry.paymentId}, ${entry.requestHash}, 'pending',
        ${entry.principal}, ${entry.payer}, ${entry.network}, ${entry.scheme}, ${entry.asset}, ${entry.payTo},
        ${entry.amount}, ${Number(entry.worstCaseUnits)}, ${Number(entry.feeStroops)}, '[]',
        ${entry.authorization?.nonce ?? null}, ${entry.authorization?.expirationLedger ?? null}, ${nowMs}, ${nowMs})`
    yield* transition(sql, entry.id, null, "pending", "reserved: budgets passed, about to forward", nowMs)
    return entry.id
  })
