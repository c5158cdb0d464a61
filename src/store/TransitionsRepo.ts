import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import type { StatusTransition } from "../domain/observations.js"
import type { ServiceStatus } from "../domain/resources.js"

interface TransitionRow {
  readonly resource_id: string
  readonly from_status: ServiceStatus
  readonly to_status: ServiceStatus
  readonly from_level: number
  readonly to_level: number
  readonly reason: string
  readonly at: string
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return {
    /** `id` must sort like `at` (see observationId) so the newest-first order is stable. */
    insert: (id: string, t: StatusTransition) =>
      sql`INSERT INTO status_transitions (id, resource_id, from_status, to_status, from_level, to_level, reason, at, at_ms)
        VALUES (${id}, ${t.resourceId}, ${t.from}, ${t.to}, ${t.fromLevel}, ${t.toLevel}, ${t.reason}, ${t.at},
          ${Date.parse(t.at)})`.pipe(Effect.asVoid),

    /** The newest transitions of one resource, newest first. */
    recent: (resourceId: string, limit: number) =>
      sql<TransitionRow>`
        SELECT resource_id, from_status, to_status, from_level, to_level, reason, at FROM status_transitions
        WHERE resource_id = ${resourceId} ORDER BY id DESC LIMIT ${limit}`.pipe(
        Effect.map((rows) =>
          rows.map(
            (r): StatusTransition => ({
              resourceId: r.resource_id,
              from: r.from_status,
              to: r.to_status,
              fromLevel: Number(r.from_level),
              toLevel: Number(r.to_level),
              reason: r.reason,
              at: r.at
            })
          )
        )
      )
  }
})

export class TransitionsRepo extends Context.Tag("sextant/TransitionsRepo")<
  TransitionsRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(TransitionsRepo, make)
}
