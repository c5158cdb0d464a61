import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import type { StatusTransition } from "../domain/observations.js"
import { ServiceStatus } from "../domain/resources.js"
import { decodeRows, repository, SqlNumber } from "./repository.js"

/** What TransitionsRepo offers. */
export interface TransitionsRepoShape {
  /** `id` must sort like `at` (see observationId) so the newest-first order is stable. */
  readonly insert: (id: string, t: StatusTransition) => Effect.Effect<void>
  /** The newest transitions of one resource, newest first. */
  readonly recent: (resourceId: ResourceId, limit: number) => Effect.Effect<Array<StatusTransition>>
}

export class TransitionsRepo extends Context.Tag("sextant/TransitionsRepo")<TransitionsRepo, TransitionsRepoShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(TransitionsRepo, make))
}

const TransitionRow = Schema.Struct({
  resource_id: ResourceId,
  from_status: ServiceStatus,
  to_status: ServiceStatus,
  from_level: SqlNumber,
  to_level: SqlNumber,
  reason: Schema.String,
  at: Schema.String
})
const decodeTransitions = decodeRows(TransitionRow)

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return repository("TransitionsRepo", {
    insert: (id: string, t: StatusTransition) =>
      sql`INSERT INTO status_transitions (id, resource_id, from_status, to_status, from_level, to_level, reason, at, at_ms)
        VALUES (${id}, ${t.resourceId}, ${t.from}, ${t.to}, ${t.fromLevel}, ${t.toLevel}, ${t.reason}, ${t.at},
          ${Date.parse(t.at)})`.pipe(Effect.asVoid),

    recent: (resourceId: ResourceId, limit: number) =>
      sql`
        SELECT resource_id, from_status, to_status, from_level, to_level, reason, at FROM status_transitions
        WHERE resource_id = ${resourceId} ORDER BY id DESC LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeTransitions),
        Effect.map((rows) =>
          rows.map(
            (r): StatusTransition => ({
              resourceId: r.resource_id,
              from: r.from_status,
              to: r.to_status,
              fromLevel: r.from_level,
              toLevel: r.to_level,
              reason: r.reason,
              at: r.at
            })
          )
        )
      )
  })
})
