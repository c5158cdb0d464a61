import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { chunksOf, decodeRows, repository, SqlNumber } from "./repository.js"

const ClaimRow = Schema.Struct({ resource_id: Schema.String, due_ms: SqlNumber })
const decodeClaims = decodeRows(ClaimRow)

/** A resource claimed for probing: until `leaseUntilMs` no other instance takes it. */
export interface Claim {
  readonly resourceId: string
  readonly dueMs: number
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const postgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })

  return repository("ProbeScheduleRepo", {
    /**
     * Over the ids after `afterId` up to `upTo` (to the end when null): gives every resource in
     * `targetIds` (the probe targets of that range) a due time, a new one due at once, and drops
     * the range's schedule rows of resources that are no longer probe targets.
     */
    sync: (targetIds: ReadonlyArray<string>, nowMs: number, afterId: string, upTo: string | null) =>
      Effect.gen(function* () {
        const range = upTo === null ? sql`resource_id > ${afterId}` : sql`resource_id > ${afterId} AND resource_id <= ${upTo}`
        const known = new Set(
          (yield* sql<{ resource_id: string }>`SELECT resource_id FROM probe_schedule WHERE ${range}`).map((r) => r.resource_id)
        )
        const targets = new Set(targetIds)
        const fresh = targetIds.filter((id) => !known.has(id))
        for (let i = 0; i < fresh.length; i += 500) {
          const rows = fresh.slice(i, i + 500).map((id) => ({ resource_id: id, due_ms: nowMs, lease_until_ms: 0 }))
          yield* sql`INSERT INTO probe_schedule ${sql.insert(rows)} ON CONFLICT (resource_id) DO NOTHING`
        }
        const gone = [...known].filter((id) => !targets.has(id))
        for (let i = 0; i < gone.length; i += 500) {
          yield* sql`DELETE FROM probe_schedule WHERE ${sql.in("resource_id", gone.slice(i, i + 500))}`
        }
        return { added: fresh.length, removed: gone.length }
      }),

    /**
     * Claims at most `limit` resources that are due and not leased by anyone (a lease that ran out
     * is free again: its instance died or stalled). On Postgres the rows are locked with
     * `FOR UPDATE SKIP LOCKED`, so instances claiming at once take disjoint sets without waiting.
     */
    claim: (owner: string, nowMs: number, limit: number, leaseMs: number) =>
      sql`UPDATE probe_schedule SET lease_owner = ${owner}, lease_until_ms = ${nowMs + leaseMs}
        WHERE resource_id IN (
          SELECT resource_id FROM probe_schedule
          WHERE due_ms <= ${nowMs} AND lease_until_ms <= ${nowMs}
          ORDER BY due_ms LIMIT ${limit} ${postgres ? sql`FOR UPDATE SKIP LOCKED` : sql``})
        RETURNING resource_id, due_ms`.pipe(
        Effect.flatMap(decodeClaims),
        Effect.map((rows) => rows.map((r): Claim => ({ resourceId: r.resource_id, dueMs: r.due_ms })))
      ),

    /**
     * After the probes of claims: each one's next due time, and the lease released. Only while
     * `owner` still holds the lease: if it ran out and another instance took the resource, that
     * one's schedule stands. One statement per chunk of claims.
     */
    complete: (owner: string, done: ReadonlyArray<{ readonly resourceId: string; readonly nextDueMs: number }>) =>
      Effect.forEach(
        chunksOf(done, 500),
        (part) =>
          sql`UPDATE probe_schedule SET due_ms = v.column2, lease_owner = NULL, lease_until_ms = 0
            FROM (VALUES ${sql.csv(part.map((d) => sql`(CAST(${d.resourceId} AS TEXT), CAST(${d.nextDueMs} AS BIGINT))`))}) AS v
            WHERE probe_schedule.resource_id = v.column1 AND probe_schedule.lease_owner = ${owner}`,
        { discard: true }
      ),

    /** Gives back claims not probed (the instance is stopping), due at once for whoever is left. */
    release: (resourceIds: ReadonlyArray<string>, owner: string) =>
      resourceIds.length === 0
        ? Effect.void
        : sql`UPDATE probe_schedule SET lease_owner = NULL, lease_until_ms = 0
            WHERE ${sql.in("resource_id", resourceIds)} AND lease_owner = ${owner}`.pipe(Effect.asVoid)
  })
})

export class ProbeScheduleRepo extends Context.Tag("sextant/ProbeScheduleRepo")<
  ProbeScheduleRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(ProbeScheduleRepo, make)
}
