import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { WRITE_CHUNK } from "./catalogEntryRows.js"
import { chunksOf } from "./repository.js"

/**
 * What ingestion quotas count (catalog/ingestionQuota.ts): untrusted entries other than
 * validations, of `source`, and by each of the given origins, principals and payees, in chunks
 * of WRITE_CHUNK keys per statement.
 */
export const countOpen = (
  sql: SqlClient.SqlClient,
  source: string,
  keys: {
    readonly origins: ReadonlyArray<string>
    readonly principals: ReadonlyArray<string>
    readonly payees: ReadonlyArray<string>
  }
) =>
  Effect.gen(function* () {
    const open = sql.literal("r.trusted = 0 AND r.source <> 'validate'")
    const grouped = (column: "origin" | "added_by", values: ReadonlyArray<string>) =>
      Effect.map(
        Effect.forEach(
          chunksOf([...new Set(values)], WRITE_CHUNK),
          (part) =>
            sql<{ k: string; n: unknown }>`SELECT r.${sql.literal(column)} AS k, COUNT(*) AS n FROM resources r
            WHERE ${open} AND ${sql.in(`r.${column}`, part)} GROUP BY r.${sql.literal(column)}`
        ),
        (parts) => new Map(parts.flat().map((row) => [row.k, Number(row.n)] as const))
      )
    const [row] = yield* sql<{
      n: unknown
    }>`SELECT COUNT(*) AS n FROM resources r WHERE ${open} AND r.source = ${source}`
    const payees = yield* Effect.map(
      Effect.forEach(
        chunksOf([...new Set(keys.payees)], WRITE_CHUNK),
        (part) =>
          sql<{ k: string; n: unknown }>`SELECT o.pay_to AS k, COUNT(DISTINCT o.resource_id) AS n
          FROM payment_options o JOIN resources r ON r.id = o.resource_id
          WHERE ${open} AND ${sql.in("o.pay_to", part)} GROUP BY o.pay_to`
      ),
      (parts) => new Map(parts.flat().map((r) => [r.k, Number(r.n)] as const))
    )
    return {
      source: Number(row?.n ?? 0),
      origins: yield* grouped("origin", keys.origins),
      principals: yield* grouped("added_by", keys.principals),
      payees
    }
  })
