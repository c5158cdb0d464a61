import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { EconomicEvent } from "../domain/evidence.js"

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** Events about a resource: named by id, or naming none but paying one of its payees. */
  const about = (resourceId: string, payTos: ReadonlyArray<string>) =>
    payTos.length === 0
      ? sql`resource_id = ${resourceId}`
      : sql`(resource_id = ${resourceId} OR (resource_id IS NULL AND ${sql.in("pay_to", payTos)}))`

  return {
    insert: (id: string, e: EconomicEvent) =>
      sql`INSERT INTO economic_events (id, source, resource_id, pay_to, success, transaction_hash, at, at_ms)
        VALUES (${id}, ${e.source}, ${e.resourceId}, ${e.payTo}, ${e.success ? 1 : 0}, ${e.transactionHash}, ${e.at},
          ${Date.parse(e.at)})`.pipe(Effect.asVoid),

    /** Outcomes about the resource since `sinceMs`: the input of the transaction success rate. */
    window: (resourceId: string, payTos: ReadonlyArray<string>, sinceMs: number) =>
      sql<{ success: number }>`SELECT success FROM economic_events
        WHERE ${about(resourceId, payTos)} AND at_ms >= ${sinceMs}`.pipe(
        Effect.map((rows) => rows.map((r) => ({ success: Number(r.success) === 1 })))
      ),

    /** Whether any payment about the resource ever succeeded: level 3 evidence. */
    anySuccess: (resourceId: string, payTos: ReadonlyArray<string>) =>
      sql<{ n: number }>`SELECT COUNT(*) AS n FROM economic_events WHERE ${about(resourceId, payTos)} AND success = 1`.pipe(
        Effect.map((rows) => Number(rows[0]?.n ?? 0) > 0)
      )
  }
})

export class EconomicEventsRepo extends Context.Tag("sextant/EconomicEventsRepo")<
  EconomicEventsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(EconomicEventsRepo, make)
}
