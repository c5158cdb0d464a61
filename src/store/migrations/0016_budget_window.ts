import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A settle's reservation sums the budget window (SettlementJournal.usageSince: each principal's
 * worst-case spend, the fees reserved, the oldest charge) over every settlement since the
 * window's start. With the columns it reads in the index, the sum walks the index alone instead
 * of fetching each settlement's row (about half of that statement at 800 settlements in the
 * window). It replaces the index by creation time alone, which is its prefix. Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX settlements_budget_window ON settlements(created_at_ms, principal, state, worst_case_units, fee_stroops)`
  yield* sql`DROP INDEX settlements_created`
})
