import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Economic events by transaction hash: before an event counts, `EconomicEventsRepo.claimedElsewhere`
 * asks whether its transaction already counts for another resource (one transaction, one
 * resource), on every settle and every economic probe. Without this index that read scanned the
 * whole table, which grows with every payment. Portable SQL.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX economic_events_transaction ON economic_events(transaction_hash)`
})
