import { SqlClient } from "@effect/sql"
import { Context, Effect, FiberRef, Layer } from "effect"

/**
 * A change to what routing reads of the catalog: `Resources` when it concerns those resources only
 * (status, level, quarantine, metrics row, deletion: no other resource becomes a candidate), else
 * `Catalog` (entries written, listings moved), which may add candidates to any capability.
 */
export type CatalogChange = { readonly _tag: "Resources"; readonly ids: ReadonlyArray<string> } | { readonly _tag: "Catalog" }

export const resourcesChanged = (ids: ReadonlyArray<string>): CatalogChange => ({ _tag: "Resources", ids })
export const catalogChanged: CatalogChange = { _tag: "Catalog" }

export interface CatalogChangesShape {
  /**
   * Announces a change the statement just run made. Outside a transaction it is committed, and
   * listeners hear of it at once; inside one, they hear of it when the outermost transaction ends,
   * since a reader on another connection sees the rows only then.
   */
  readonly changed: (change: CatalogChange) => Effect.Effect<void>
  /** Calls `listener` with every change announced from now on, for as long as the store lives. */
  readonly subscribe: (listener: (change: CatalogChange) => void) => Effect.Effect<void>
}

/**
 * The writes of this process to what routing reads, so an in-memory read model (the capability
 * index of EvidenceReader) drops what they made stale before the next read. The repositories that
 * write those rows (ResourcesRepo, MetricsRepo, CurationRepo) announce each change; other
 * processes' writes are not seen here (the read model bounds its staleness for them).
 */
export class CatalogChanges extends Context.Tag("sextant/CatalogChanges")<CatalogChanges, CatalogChangesShape>() {}

/** The changes announced inside the current outermost transaction, held until it ends; null outside one. */
const pendingInTransaction = FiberRef.unsafeMake<Array<CatalogChange> | null>(null)

/**
 * CatalogChanges over a SqlClient, and the same client whose transactions deliver the changes
 * announced inside them once they end (committed or rolled back: a listener only drops what it
 * holds, so a change announced for nothing costs one reload). Every repository is built over this
 * client (StoreLive), so no transaction of this process escapes it.
 */
export const CatalogChangesLive: Layer.Layer<CatalogChanges | SqlClient.SqlClient, never, SqlClient.SqlClient> = Layer.effectContext(
  Effect.gen(function* () {
    const client = yield* SqlClient.SqlClient
    const listeners: Array<(change: CatalogChange) => void> = []
    const deliver = (changes: ReadonlyArray<CatalogChange>) => {
      for (const change of changes) for (const listener of listeners) listener(change)
    }

    const withTransaction: SqlClient.SqlClient["withTransaction"] = (effect) =>
      Effect.flatMap(FiberRef.get(pendingInTransaction), (outer) => {
        // A nested transaction is a savepoint: its changes wait for the outermost one.
        if (outer !== null) return client.withTransaction(effect)
        const pending: Array<CatalogChange> = []
        return client
          .withTransaction(Effect.locally(effect, pendingInTransaction, pending))
          .pipe(Effect.ensuring(Effect.sync(() => deliver(pending))))
      })
    const tracked = Object.assign((...args: Array<unknown>) => (client as unknown as (...a: Array<unknown>) => unknown)(...args), client, {
      withTransaction
    }) as unknown as SqlClient.SqlClient
    Object.assign(tracked, { safe: tracked })

    const changes: CatalogChangesShape = {
      changed: (change) =>
        Effect.flatMap(FiberRef.get(pendingInTransaction), (pending) =>
          Effect.sync(() => (pending === null ? deliver([change]) : void pending.push(change)))
        ),
      subscribe: (listener) => Effect.sync(() => void listeners.push(listener))
    }
    return Context.make(CatalogChanges, changes).pipe(Context.add(SqlClient.SqlClient, tracked))
  })
)
