import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { Curation, CurationAction, CurationActionKind } from "../domain/curation.js"
import { ResourceId } from "../domain/ids.js"
import { CatalogChanges, resourcesChanged } from "./CatalogChanges.js"
import { decodeRows, repository, SqlFlag } from "./repository.js"
import { StoreTransactions } from "./StoreTransactions.js"
import { sortableId } from "./sortableId.js"

/** What CurationRepo offers. */
export interface CurationRepoShape {
  /** Sets (or replaces) the operator quarantine and logs it; none when no such resource exists. */
  readonly quarantine: (id: ResourceId, author: Author) => Effect.Effect<Option.Option<CurationAction>>
  /** Lifts the operator quarantine and logs it (also when none was in force, so the request is on record). */
  readonly release: (id: ResourceId, author: Author) => Effect.Effect<Option.Option<CurationAction>>
  /** Logs an operator's list or unlist (the change itself is `ResourceListingRepo.setListed`). */
  readonly logListing: (id: ResourceId, listed: boolean, author: Author) => Effect.Effect<CurationAction>
  /**
   * Deletes a resource that no file brings back, with its observations, metrics and transitions
   * (ON DELETE CASCADE); the log keeps what was deleted, by whom and why.
   */
  readonly remove: (id: ResourceId, author: Author) => Effect.Effect<Removal>
  /** The quarantine in force and the newest listing change; none when no such resource exists. */
  readonly curationOf: (id: ResourceId) => Effect.Effect<Option.Option<Curation>>
  /** The operator actions about one resource, newest first (deleted resources included). */
  readonly actions: (resourceId: ResourceId, limit: number) => Effect.Effect<ReadonlyArray<CurationAction>>
}

export class CurationRepo extends Context.Tag("sextant/CurationRepo")<CurationRepo, CurationRepoShape>() {
  static readonly Live = Layer.suspend(() => Layer.effect(CurationRepo, make))
}

const QuarantineRow = Schema.Struct({
  source: Schema.String,
  quarantined_by: Schema.NullOr(Schema.String),
  quarantine_reason: Schema.NullOr(Schema.String),
  quarantined_at: Schema.NullOr(Schema.String)
})
const ListingChangeRow = Schema.Struct({
  listed: SqlFlag,
  actor: Schema.String,
  reason: Schema.String,
  at: Schema.String
})
const ActionRow = Schema.Struct({
  resource_id: ResourceId,
  action: Schema.Literal("quarantine", "unquarantine", "list", "unlist", "delete"),
  actor: Schema.String,
  reason: Schema.String,
  at: Schema.String
})
const decodeQuarantine = decodeRows(QuarantineRow)
const decodeListingChanges = decodeRows(ListingChangeRow)
const decodeActions = decodeRows(ActionRow)

/** Who asked for a change and why. */
export interface Author {
  readonly actor: string
  readonly reason: string
}

/** What deleting a resource met: it was deleted, it does not exist, or the catalog file owns it. */
export type Removal =
  | { readonly _tag: "Deleted"; readonly action: CurationAction }
  | { readonly _tag: "Missing" }
  | { readonly _tag: "ConfigManaged" }

/**
 * The operator's side of the resource rows: the quarantine columns, deletion, and the
 * `operator_actions` log every curation writes to. Listing itself goes through
 * `ResourceListingRepo.setListed`, which keeps its own `listing_changes`.
 */
const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { transaction } = yield* StoreTransactions
  const changes = yield* CatalogChanges

  const logAction = (resourceId: ResourceId, action: CurationActionKind, author: Author, detail: unknown = null) =>
    Effect.gen(function* () {
      const at = new Date(yield* Clock.currentTimeMillis)
      yield* sql`INSERT INTO operator_actions (id, resource_id, action, actor, reason, detail_json, at, at_ms)
        VALUES (${sortableId("op", at.getTime())}, ${resourceId}, ${action}, ${author.actor}, ${author.reason},
          ${detail === null ? null : JSON.stringify(detail)}, ${at.toISOString()}, ${at.getTime()})`
      return {
        resourceId,
        action,
        actor: author.actor,
        reason: author.reason,
        at: at.toISOString()
      } satisfies CurationAction
    })

  const exists = (id: ResourceId) =>
    sql<{ id: string }>`SELECT id FROM resources WHERE id = ${id}`.pipe(Effect.map((rows) => rows.length > 0))

  return repository("CurationRepo", {
    quarantine: (id: ResourceId, author: Author) =>
      Effect.gen(function* () {
        if (!(yield* exists(id))) return Option.none<CurationAction>()
        const action = yield* logAction(id, "quarantine", author)
        yield* sql`UPDATE resources SET quarantined_by = ${author.actor}, quarantine_reason = ${author.reason},
          quarantined_at = ${action.at}, updated_at = ${action.at} WHERE id = ${id}`
        yield* changes.changed(resourcesChanged([id]))
        return Option.some(action)
      }).pipe(transaction),

    release: (id: ResourceId, author: Author) =>
      Effect.gen(function* () {
        if (!(yield* exists(id))) return Option.none<CurationAction>()
        const action = yield* logAction(id, "unquarantine", author)
        yield* sql`UPDATE resources SET quarantined_by = NULL, quarantine_reason = NULL, quarantined_at = NULL,
          updated_at = ${action.at} WHERE id = ${id}`
        yield* changes.changed(resourcesChanged([id]))
        return Option.some(action)
      }).pipe(transaction),

    logListing: (id: ResourceId, listed: boolean, author: Author) => logAction(id, listed ? "list" : "unlist", author),

    remove: (id: ResourceId, author: Author) =>
      Effect.gen(function* () {
        const rows =
          yield* sql`SELECT source, url, quarantined_by, quarantine_reason, quarantined_at FROM resources WHERE id = ${id}`
        const found = (yield* decodeQuarantine(rows))[0]
        if (found === undefined) return { _tag: "Missing" } satisfies Removal as Removal
        if (found.source === "config") return { _tag: "ConfigManaged" } satisfies Removal as Removal
        const action = yield* logAction(id, "delete", author, rows[0])
        yield* sql`DELETE FROM resources WHERE id = ${id}`
        yield* changes.changed(resourcesChanged([id]))
        return { _tag: "Deleted", action } satisfies Removal as Removal
      }).pipe(transaction),

    curationOf: (id: ResourceId) =>
      Effect.gen(function* () {
        const quarantine =
          (yield* sql`SELECT source, quarantined_by, quarantine_reason, quarantined_at FROM resources WHERE id = ${id}`.pipe(
            Effect.flatMap(decodeQuarantine)
          ))[0]
        if (quarantine === undefined) return Option.none<Curation>()
        const change = (yield* sql`SELECT listed, actor, reason, at FROM listing_changes WHERE resource_id = ${id}
          ORDER BY id DESC LIMIT 1`.pipe(Effect.flatMap(decodeListingChanges)))[0]
        return Option.some<Curation>({
          quarantine:
            quarantine.quarantined_by === null
              ? null
              : {
                  actor: quarantine.quarantined_by,
                  reason: quarantine.quarantine_reason ?? "",
                  at: quarantine.quarantined_at ?? ""
                },
          lastListingChange: change === undefined ? null : change
        })
      }),

    actions: (resourceId: ResourceId, limit: number) =>
      sql`SELECT resource_id, action, actor, reason, at FROM operator_actions WHERE resource_id = ${resourceId}
        ORDER BY id DESC LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeActions),
        Effect.map((rows) =>
          rows.map(
            (r): CurationAction => ({
              resourceId: r.resource_id,
              action: r.action,
              actor: r.actor,
              reason: r.reason,
              at: r.at
            })
          )
        )
      )
  })
})
