import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The settle's payee check reads a few resources paying the payee, whatever their number
 * (MetricsRepo.payeeShortlist, docs/decisions.md "Settle overhead"):
 * - payment options by payee and resource: whether one resource pays the payee is one index seek,
 *   and a payee's resources are walked in id order. It replaces the index by payee alone, which
 *   is its prefix;
 * - the quarantined resources (a partial index: quarantine is rare), so "is any resource paying
 *   the payee quarantined" starts from them rather than from every resource paying it.
 * Portable SQL (SQLite and Postgres).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX payment_options_payee ON payment_options(pay_to, resource_id)`
  yield* sql`DROP INDEX payment_options_pay_to`
  yield* sql`CREATE INDEX resources_quarantined ON resources(id) WHERE status = 'QUARANTINED'`
})
