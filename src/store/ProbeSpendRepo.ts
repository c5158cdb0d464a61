import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import type { ResourceId } from "../domain/ids.js"
import { decodeRows, repository, SqlBigInt } from "./repository.js"
import { StoreTransactions } from "./StoreTransactions.js"
import { sortableId } from "./sortableId.js"

/** What ProbeSpendRepo offers. */
export interface ProbeSpendRepoShape {
  /**
   * Reserves `units` of today's economic-probe budget when what is already reserved today leaves
   * room for it; answers the reservation's id, or null when the budget would be exceeded. The
   * lock row first, so concurrent reservations (other processes too) run one after another.
   */
  readonly reserve: (
    resourceId: ResourceId,
    units: bigint,
    budgetUnits: bigint,
    nowMs: number
  ) => Effect.Effect<string | null>
  /** Gives a reservation back: nothing was paid under it. */
  readonly release: (id: string) => Effect.Effect<void>
  /** Base units reserved on the UTC day of `atMs`. */
  readonly spentOn: (atMs: number) => Effect.Effect<bigint>
}

export class ProbeSpendRepo extends Context.Tag("sextant/ProbeSpendRepo")<ProbeSpendRepo, ProbeSpendRepoShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(ProbeSpendRepo, make))
}

const SpentRow = Schema.Struct({ spent: Schema.NullOr(SqlBigInt) })
const decodeSpent = decodeRows(SpentRow)

/** The UTC day a time falls in, as the budget counts it. */
export const utcDay = (atMs: number) => new Date(atMs).toISOString().slice(0, 10)

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { transaction } = yield* StoreTransactions
  return repository("ProbeSpendRepo", {
    reserve: (resourceId: ResourceId, units: bigint, budgetUnits: bigint, nowMs: number) =>
      transaction(
        Effect.gen(function* () {
          yield* sql`UPDATE economic_probe_lock SET version = version + 1 WHERE id = 1`
          const day = utcDay(nowMs)
          const [row] = yield* sql`SELECT SUM(units) AS spent FROM economic_probe_spend WHERE day = ${day}`.pipe(
            Effect.flatMap(decodeSpent)
          )
          if ((row?.spent ?? 0n) + units > budgetUnits) return null
          const id = sortableId("eps", nowMs)
          yield* sql`INSERT INTO economic_probe_spend (id, resource_id, day, units, at_ms)
            VALUES (${id}, ${resourceId}, ${day}, ${Number(units)}, ${nowMs})`
          return id
        })
      ),
    release: (id: string) => sql`DELETE FROM economic_probe_spend WHERE id = ${id}`.pipe(Effect.asVoid),
    spentOn: (atMs: number) =>
      sql`SELECT SUM(units) AS spent FROM economic_probe_spend WHERE day = ${utcDay(atMs)}`.pipe(
        Effect.flatMap(decodeSpent),
        Effect.map(([row]) => row?.spent ?? 0n)
      )
  })
})

/** What economic probes spent, per UTC day. */
