import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import type { StoredStanding } from "../domain/metrics.js"
import type { ResourceRecord } from "../domain/resources.js"
import { MetricsColumns, MetricsRow, toSnapshot } from "./MetricsRepo.js"
import { decodeRows, repository } from "./repository.js"
import {
  decodeCapabilities,
  decodeOptions,
  groupBy,
  LISTED_ONLY,
  ResourceRow,
  toOption,
  toRecord
} from "./resourceRows.js"

/** A record with the stored standing its evidence is derived from. */
export interface RecordWithStanding {
  readonly record: ResourceRecord
  readonly standing: StoredStanding
}

/** The route read model: a capability's candidates with everything a route judges them by. */
export interface RouteCandidatesRepoShape {
  /**
   * The listed resources with a capability, each with its stored standing (status, level,
   * quarantine, metrics row), read from the capability index: the candidates with their metrics
   * rows in one query, their capabilities and payment options in one query each. What a route needs.
   */
  readonly byCapabilityWithStandings: (capability: string) => Effect.Effect<Array<RecordWithStanding>>
}

export class RouteCandidatesRepo extends Context.Tag("sextant/RouteCandidatesRepo")<
  RouteCandidatesRepo,
  RouteCandidatesRepoShape
>() {}

/** A route candidate's row: the resource, its provider and quarantine, and its metrics columns (all null when never measured). */
const CandidateRow = Schema.Struct({
  ...ResourceRow.fields,
  quarantined_by: Schema.NullOr(Schema.String),
  quarantine_reason: Schema.NullOr(Schema.String),
  quarantined_at: Schema.NullOr(Schema.String),
  resource_id: Schema.NullOr(ResourceId)
})
const decodeCandidates = decodeRows(CandidateRow)
const decodeMetricsRows = decodeRows(Schema.NullOr(MetricsRow))

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const listedOnly = sql.literal(LISTED_ONLY)
  // The metrics columns by name (this code's own constants): the table has columns routing does not read.
  const metricColumns = sql.literal(
    Object.keys(MetricsColumns)
      .map((c) => `m.${c}`)
      .join(", ")
  )

  const byCapabilityWithStandings = (capability: string) =>
    Effect.gen(function* () {
      const raw = yield* sql`
        SELECT r.id, r.provider_id, p.name AS provider_name, p.url AS provider_url, p.contact AS provider_contact,
               r.type, r.name, r.description, r.url, r.method, r.status, r.verification_level, r.listed, r.source, r.trusted,
               r.service_name, r.tags, r.icon_url, r.mcp_tool,
               r.quarantined_by, r.quarantine_reason, r.quarantined_at, ${metricColumns}
        FROM resource_capabilities k
        JOIN resources r ON r.id = k.resource_id
        JOIN providers p ON p.id = r.provider_id
        LEFT JOIN resource_metrics m ON m.resource_id = r.id
        WHERE k.capability = ${capability} AND ${listedOnly}
        ORDER BY r.id`
      const rows = yield* decodeCandidates(raw)
      if (rows.length === 0) return [] as Array<RecordWithStanding>
      const caps = yield* sql`
        SELECT c.resource_id, c.capability FROM resource_capabilities k
        JOIN resource_capabilities c ON c.resource_id = k.resource_id
        WHERE k.capability = ${capability} ORDER BY c.capability`.pipe(Effect.flatMap(decodeCapabilities))
      const options = yield* sql`
        SELECT o.* FROM resource_capabilities k JOIN payment_options o ON o.resource_id = k.resource_id
        WHERE k.capability = ${capability} ORDER BY o.resource_id, o.option_index`.pipe(Effect.flatMap(decodeOptions))
      const capsBy = groupBy(caps, (c) => c.resource_id)
      const optionsBy = groupBy(options, (o) => o.resource_id)
      // The metrics columns of each row, or null for a resource never measured: one decode for all rows.
      const metrics = yield* decodeMetricsRows(raw.map((r, i) => (rows[i]?.resource_id === null ? null : r)))
      return rows.map((row, i): RecordWithStanding => {
        const measured = metrics[i] ?? null
        return {
          record: toRecord(
            row,
            (capsBy.get(row.id) ?? []).map((c) => c.capability),
            (optionsBy.get(row.id) ?? []).map(toOption)
          ),
          standing: {
            resourceId: row.id,
            status: row.status,
            level: row.verification_level,
            snapshot: measured === null ? null : toSnapshot(measured),
            operatorQuarantine:
              row.quarantined_by === null
                ? null
                : { actor: row.quarantined_by, reason: row.quarantine_reason ?? "", at: row.quarantined_at ?? "" }
          }
        }
      })
    })

  const methods: RouteCandidatesRepoShape = repository("RouteCandidatesRepo", { byCapabilityWithStandings })
  return methods
})

export const RouteCandidatesRepoLive = Layer.effect(RouteCandidatesRepo, make)
