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

    /**
     * Payments about the resource: how many since `sinceMs` and how many of those succeeded (the
     * transaction success rate), and whether any ever succeeded (level 3 evidence). One query.
     */
    summary: (resourceId: string, payTos: ReadonlyArray<string>, sinceMs: number) =>
      sql<{ total: number | null; successes: number | null; ever: number | null }>`
        SELECT SUM(CASE WHEN at_ms >= ${sinceMs} THEN 1 ELSE 0 END) AS total,
               SUM(CASE WHEN at_ms >= ${sinceMs} AND success = 1 THEN 1 ELSE 0 END) AS successes,
               MAX(success) AS ever
        FROM economic_events WHERE ${about(resourceId, payTos)}`.pipe(
        Effect.map(([row]) => ({
          total: Number(row?.total ?? 0),
          successes: Number(row?.successes ?? 0),
          everSucceeded: Number(row?.ever ?? 0) === 1
        }))
      )
  }
})

export class EconomicEventsRepo extends Context.Tag("sextant/EconomicEventsRepo")<
  EconomicEventsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(EconomicEventsRepo, make)
}
