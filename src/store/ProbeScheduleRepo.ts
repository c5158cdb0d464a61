import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { chunksOf, decodeRows, repository, SqlNumber } from "./repository.js"

/** What ProbeScheduleRepo offers. */
export interface ProbeScheduleRepoShape {
  /**
   * Over the ids after `afterId` up to `upTo` (to the end when null): gives every resource in
   * `targets` (the probe targets of that range, with their lane) a due time, a new one due at
   * once, moves one whose trust changed to its lane, and drops the range's schedule rows of
   * resources that are no longer probe targets.
   */
  readonly sync: (
    targets: ReadonlyArray<{ readonly id: ResourceId; readonly lane: ProbeLane }>,
    nowMs: number,
    afterId: string,
    upTo: string | null
  ) => Effect.Effect<{ readonly added: number; readonly removed: number }>
  /**
   * Claims at most `limit` resources of `lane` that are due and not leased by anyone (a lease that
   * ran out is free again: its instance died or stalled). On Postgres the rows are locked with
   * `FOR UPDATE SKIP LOCKED`, so instances claiming at once take disjoint sets without waiting.
   */
  readonly claim: (
    owner: string,
    nowMs: number,
    limit: number,
    leaseMs: number,
    lane: ProbeLane
  ) => Effect.Effect<Array<Claim>>
  /**
   * After the probes of claims: each one's next due time, and the lease released. Only while
   * `owner` still holds the lease: if it ran out and another instance took the resource, that
   * one's schedule stands. One statement per chunk of claims.
   */
  readonly complete: (
    owner: string,
    done: ReadonlyArray<{ readonly resourceId: ResourceId; readonly nextDueMs: number }>
  ) => Effect.Effect<void>
  /** Gives back claims not probed (the instance is stopping), due at once for whoever is left. */
  readonly release: (resourceIds: ReadonlyArray<string>, owner: string) => Effect.Effect<void>
}

export class ProbeScheduleRepo extends Context.Tag("sextant/ProbeScheduleRepo")<
  ProbeScheduleRepo,
  ProbeScheduleRepoShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(ProbeScheduleRepo, make))
}

const ClaimRow = Schema.Struct({ resource_id: ResourceId, due_ms: SqlNumber })
const decodeClaims = decodeRows(ClaimRow)

/**
 * The probe lanes (docs/trust.md): trusted entries (the catalog file's, an operator's) are claimed
 * and probed apart from everything strangers added, so no number of dead targets delays them.
 */
export type ProbeLane = "trusted" | "open"
const laneValue = (lane: ProbeLane) => (lane === "trusted" ? 1 : 0)

/** A resource claimed for probing: until `leaseUntilMs` no other instance takes it. */
export interface Claim {
  readonly resourceId: ResourceId
  readonly dueMs: number
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const postgres = sql.onDialectOrElse({ pg: () => true, orElse: () => false })

  return repository("ProbeScheduleRepo", {
    sync: (
      targets: ReadonlyArray<{ readonly id: ResourceId; readonly lane: ProbeLane }>,
      nowMs: number,
      afterId: string,
      upTo: string | null
    ) =>
      Effect.gen(function* () {
        const range =
          upTo === null ? sql`resource_id > ${afterId}` : sql`resource_id > ${afterId} AND resource_id <= ${upTo}`
        const stored = yield* sql<{
          resource_id: string
          lane: unknown
        }>`SELECT resource_id, lane FROM probe_schedule WHERE ${range}`
        const known = new Map(stored.map((r) => [r.resource_id, Number(r.lane)] as const))
        const fresh = targets.filter((t) => !known.has(t.id))
        for (let i = 0; i < fresh.length; i += 500) {
          const rows = fresh
            .slice(i, i + 500)
            .map((t) => ({ resource_id: t.id, due_ms: nowMs, lease_until_ms: 0, lane: laneValue(t.lane) }))
          yield* sql`INSERT INTO probe_schedule ${sql.insert(rows)} ON CONFLICT (resource_id) DO NOTHING`
        }
        for (const lane of ["trusted", "open"] as const) {
          const moved = targets
            .filter((t) => t.lane === lane && known.has(t.id) && known.get(t.id) !== laneValue(lane))
            .map((t) => t.id)
          for (let i = 0; i < moved.length; i += 500) {
            yield* sql`UPDATE probe_schedule SET lane = ${laneValue(lane)} WHERE ${sql.in("resource_id", moved.slice(i, i + 500))}`
          }
        }
        const ids = new Set<string>(targets.map((t) => t.id))
        const gone = [...known.keys()].filter((id) => !ids.has(id))
        for (let i = 0; i < gone.length; i += 500) {
          yield* sql`DELETE FROM probe_schedule WHERE ${sql.in("resource_id", gone.slice(i, i + 500))}`
        }
        return { added: fresh.length, removed: gone.length }
      }),

    claim: (owner: string, nowMs: number, limit: number, leaseMs: number, lane: ProbeLane) =>
      sql`UPDATE probe_schedule SET lease_owner = ${owner}, lease_until_ms = ${nowMs + leaseMs}
        WHERE resource_id IN (
          SELECT resource_id FROM probe_schedule
          WHERE lane = ${laneValue(lane)} AND due_ms <= ${nowMs} AND lease_until_ms <= ${nowMs}
          ORDER BY due_ms LIMIT ${limit} ${postgres ? sql`FOR UPDATE SKIP LOCKED` : sql``})
        RETURNING resource_id, due_ms`.pipe(
        Effect.flatMap(decodeClaims),
        Effect.map((rows) => rows.map((r): Claim => ({ resourceId: r.resource_id, dueMs: r.due_ms })))
      ),

    complete: (owner: string, done: ReadonlyArray<{ readonly resourceId: ResourceId; readonly nextDueMs: number }>) =>
      Effect.forEach(
        chunksOf(done, 500),
        (part) =>
          sql`UPDATE probe_schedule SET due_ms = v.column2, lease_owner = NULL, lease_until_ms = 0
            FROM (VALUES ${sql.csv(part.map((d) => sql`(CAST(${d.resourceId} AS TEXT), CAST(${d.nextDueMs} AS BIGINT))`))}) AS v
            WHERE probe_schedule.resource_id = v.column1 AND probe_schedule.lease_owner = ${owner}`,
        { discard: true }
      ),

    release: (resourceIds: ReadonlyArray<string>, owner: string) =>
      resourceIds.length === 0
        ? Effect.void
        : sql`UPDATE probe_schedule SET lease_owner = NULL, lease_until_ms = 0
            WHERE ${sql.in("resource_id", resourceIds)} AND lease_owner = ${owner}`.pipe(Effect.asVoid)
  })
})
