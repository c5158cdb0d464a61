import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { ListingHold, type ServiceStatus } from "../domain/resources.js"
import { CatalogChanges, catalogChanged, resourcesChanged } from "./CatalogChanges.js"
import { holdAfter, type ListingChange, nowIso, recordListings } from "./listingChanges.js"
import { decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"
import { PROBE_TARGET_RULE } from "./resourceRows.js"
import { StoreTransactions } from "./StoreTransactions.js"

/** A resource's listing as the probe rule reads it. */
export interface ListingState {
  readonly listed: boolean
  readonly hold: ListingHold | null
  readonly unhealthySinceMs: number | null
}

/** What the probe rule decided: the new unhealthy-since time and, when the listing moves, the change. */
export interface ListingStep {
  readonly unhealthySinceMs: number | null
  readonly change: { readonly listed: boolean; readonly reason: string; readonly hold: ListingHold | null } | null
}

/**
 * Where each resource stands in the catalog and how it moves: listing and vouching, status and
 * level, the probe rule's listing steps, what the probe schedule visits, and retention by age.
 */
export interface ResourceListingRepoShape {
  /**
   * Lists or unlists a resource, storing the change when the listing moved; an unlisting's hold
   * (default "operator": no probe lists it again) is set even when it was unlisted already.
   * False when no such resource exists.
   */
  readonly setListed: (id: ResourceId, listed: boolean, change: ListingChange) => Effect.Effect<boolean>
  /**
   * An operator's listing vouches for the entry (docs/trust.md); unlisting takes that back, but
   * an entry of the catalog file stays trusted.
   */
  readonly setVouched: (id: ResourceId, vouched: boolean) => Effect.Effect<void>
  readonly setStatus: (id: ResourceId, status: ServiceStatus, level: number) => Effect.Effect<void>
  /**
   * After a batch of probes: reads their resources' listings in one query, lets each `decide`
   * (the probe rule, docs/decisions.md) say what changes, and stores only the changes. The caller
   * runs it in a transaction (the recorder's batch, after the observations) so an operator's
   * concurrent change is not lost. A resource probed twice in the batch is decided in order.
   */
  readonly afterProbes: (
    probes: ReadonlyArray<{ readonly id: ResourceId; readonly decide: (state: ListingState) => ListingStep }>,
    actor: string
  ) => Effect.Effect<void>
  /** Since when each of `ids` has been unhealthy (absent: healthy, or no such resource). */
  readonly unhealthySince: (ids: ReadonlyArray<ResourceId>) => Effect.Effect<Map<string, number>>
  /**
   * The ids of what the probe schedule visits (see probeTargets) after `afterId`, at most `limit`,
   * by id, each with its probe lane (trusted entries apart), without loading the records.
   */
  readonly probeTargetIds: (
    afterId: string,
    limit: number
  ) => Effect.Effect<Array<{ readonly id: ResourceId; readonly lane: "trusted" | "open" }>>
  /**
   * Deletes the unlisted resources `/v1/validate` created that nobody has validated since
   * `cutoffMs` (their observations, metrics and transitions go with them); one an operator
   * quarantined stays, with its reason. Answers how many went.
   */
  readonly pruneUnlisted: (cutoffMs: number) => Effect.Effect<number>
  /**
   * Deletes untrusted entries (not the catalog file's, not operator-listed, not validations,
   * which have their own retention) unhealthy since before `cutoffMs`, with their observations,
   * metrics and transitions; one an operator quarantined stays, with its reason. Answers how many went.
   */
  readonly retireUnhealthy: (cutoffMs: number) => Effect.Effect<number>
}

export class ResourceListingRepo extends Context.Tag("sextant/ResourceListingRepo")<
  ResourceListingRepo,
  ResourceListingRepoShape
>() {}

const StateRow = Schema.Struct({
  id: ResourceId,
  listed: SqlFlag,
  listing_hold: Schema.NullOr(ListingHold),
  unhealthy_since_ms: Schema.NullOr(SqlNumber)
})
const decodeState = decodeRows(StateRow)
const decodeTargets = decodeRows(Schema.Struct({ id: ResourceId, trusted: SqlFlag }))

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* CatalogChanges
  const { transaction } = yield* StoreTransactions
  const probeTargetRule = sql.literal(PROBE_TARGET_RULE)
  const record = recordListings(sql)

  const writeListing = (id: ResourceId, wasListed: boolean, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      const hold = holdAfter(listed, change)
      yield* sql`UPDATE resources SET listed = ${listed ? 1 : 0}, listing_hold = ${hold}, updated_at = ${yield* nowIso} WHERE id = ${id}`
      if (wasListed !== listed) {
        yield* record([{ id, listed }], change)
        yield* changes.changed(catalogChanged)
      }
    })

  const methods: ResourceListingRepoShape = repository("ResourceListingRepo", {
    setListed: (id: ResourceId, listed: boolean, change: ListingChange) =>
      Effect.gen(function* () {
        const rows = yield* sql<{ listed: unknown }>`SELECT listed FROM resources WHERE id = ${id}`
        if (rows[0] === undefined) return false
        yield* writeListing(id, Number(rows[0].listed) === 1, listed, change)
        return true
      }).pipe(transaction),
    setVouched: (id: ResourceId, vouched: boolean) =>
      sql`UPDATE resources SET trusted = CASE WHEN source = 'config' THEN 1 ELSE ${vouched ? 1 : 0} END WHERE id = ${id}`.pipe(
        Effect.zipRight(changes.changed(catalogChanged))
      ),
    setStatus: (id: ResourceId, status: ServiceStatus, level: number) =>
      Effect.flatMap(
        nowIso,
        (at) =>
          sql`UPDATE resources SET status = ${status}, verification_level = ${level}, updated_at = ${at} WHERE id = ${id}`
      ).pipe(Effect.zipRight(changes.changed(resourcesChanged([id])))),
    afterProbes: (
      probes: ReadonlyArray<{ readonly id: ResourceId; readonly decide: (state: ListingState) => ListingStep }>,
      actor: string
    ) =>
      Effect.gen(function* () {
        if (probes.length === 0) return
        const rows = yield* sql`SELECT id, listed, listing_hold, unhealthy_since_ms FROM resources
          WHERE ${sql.in("id", [...new Set(probes.map((p) => p.id))])}`.pipe(Effect.flatMap(decodeState))
        const states = new Map(
          rows.map((r) => [r.id, { listed: r.listed, hold: r.listing_hold, unhealthySinceMs: r.unhealthy_since_ms }])
        )
        const stored = new Map(states)
        for (const probe of probes) {
          const state = states.get(probe.id)
          if (state === undefined) continue
          const step = probe.decide(state)
          if (step.change !== null) {
            yield* writeListing(probe.id, state.listed, step.change.listed, {
              actor,
              reason: step.change.reason,
              ...(step.change.hold !== null ? { hold: step.change.hold } : {})
            })
          }
          states.set(probe.id, {
            listed: step.change?.listed ?? state.listed,
            hold: step.change === null ? state.hold : holdAfter(step.change.listed, step.change),
            unhealthySinceMs: step.unhealthySinceMs
          })
        }
        for (const [id, state] of states) {
          if (stored.get(id)?.unhealthySinceMs !== state.unhealthySinceMs) {
            yield* sql`UPDATE resources SET unhealthy_since_ms = ${state.unhealthySinceMs} WHERE id = ${id}`
          }
        }
      }),
    unhealthySince: (ids: ReadonlyArray<ResourceId>) =>
      ids.length === 0
        ? Effect.succeed(new Map<string, number>())
        : sql<{ id: string; unhealthy_since_ms: unknown }>`SELECT id, unhealthy_since_ms FROM resources
            WHERE ${sql.in("id", ids)} AND unhealthy_since_ms IS NOT NULL`.pipe(
            Effect.map((rows) => new Map(rows.map((r) => [r.id, Number(r.unhealthy_since_ms)] as const)))
          ),
    probeTargetIds: (afterId: string, limit: number) =>
      sql`SELECT r.id, r.trusted FROM resources r
        WHERE ${probeTargetRule} AND r.id > ${afterId} ORDER BY r.id LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeTargets),
        Effect.map((rows) =>
          rows.map((r) => ({ id: r.id, lane: r.trusted ? ("trusted" as const) : ("open" as const) }))
        )
      ),
    pruneUnlisted: (cutoffMs: number) =>
      sql<{ id: string }>`DELETE FROM resources
        WHERE source = 'validate' AND listed = 0 AND quarantined_by IS NULL
          AND updated_at < ${new Date(cutoffMs).toISOString()}
          AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.resource_id = resources.id AND o.observed_at_ms >= ${cutoffMs})
        RETURNING id`.pipe(Effect.map((rows) => rows.length)),
    retireUnhealthy: (cutoffMs: number) =>
      sql<{ id: string }>`DELETE FROM resources
        WHERE trusted = 0 AND source <> 'validate' AND quarantined_by IS NULL
          AND unhealthy_since_ms IS NOT NULL AND unhealthy_since_ms < ${cutoffMs}
        RETURNING id`.pipe(
        Effect.tap((rows) => (rows.length === 0 ? Effect.void : changes.changed(catalogChanged))),
        Effect.map((rows) => rows.length)
      )
  })
  return methods
})

export const ResourceListingRepoLive = Layer.effect(ResourceListingRepo, make)
