import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import type { EconomicEvent } from "../domain/evidence.js"
import { decodeRows, repository, SqlNumber } from "./repository.js"

const SummaryRow = Schema.Struct({
  total: Schema.NullOr(SqlNumber),
  successes: Schema.NullOr(SqlNumber),
  ever: Schema.NullOr(SqlNumber)
})
const decodeSummary = decodeRows(SummaryRow)

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** Events about a resource: named by id, or naming none but paying one of its payees. */
  const about = (resourceId: string, payTos: ReadonlyArray<string>) =>
    payTos.length === 0
      ? sql`resource_id = ${resourceId}`
      : sql`(resource_id = ${resourceId} OR (resource_id IS NULL AND ${sql.in("pay_to", payTos)}))`

  return repository("EconomicEventsRepo", {
    insert: (id: string, e: EconomicEvent) =>
      sql`INSERT INTO economic_events (id, source, resource_id, pay_to, success, transaction_hash, at, at_ms)
        VALUES (${id}, ${e.source}, ${e.resourceId}, ${e.payTo}, ${e.success ? 1 : 0}, ${e.transactionHash}, ${e.at},
          ${Date.parse(e.at)})`.pipe(Effect.asVoid),

    /**
     * Payments about the resource: how many since `sinceMs` and how many of those succeeded (the
     * transaction success rate), and whether any ever succeeded (level 3 evidence). One query.
     */
    summary: (resourceId: string, payTos: ReadonlyArray<string>, sinceMs: number) =>
      sql`
        SELECT SUM(CASE WHEN at_ms >= ${sinceMs} THEN 1 ELSE 0 END) AS total,
               SUM(CASE WHEN at_ms >= ${sinceMs} AND success = 1 THEN 1 ELSE 0 END) AS successes,
               MAX(success) AS ever
        FROM economic_events WHERE ${about(resourceId, payTos)}`.pipe(
        Effect.flatMap(decodeSummary),
        Effect.map(([row]) => ({
          total: row?.total ?? 0,
          successes: row?.successes ?? 0,
          everSucceeded: row?.ever === 1
        }))
      )
  })
})

export class EconomicEventsRepo extends Context.Tag("sextant/EconomicEventsRepo")<
  EconomicEventsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(EconomicEventsRepo, make)
}
