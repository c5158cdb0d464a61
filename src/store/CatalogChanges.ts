import { Context, Effect, FiberRef, Layer } from "effect"

/**
 * A change to what routing reads of the catalog: `Resources` when it concerns those resources only
 * (status, level, quarantine, metrics row, deletion: no other resource becomes a candidate), else
 * `Catalog` (entries written, listings moved), which may add candidates to any capability.
 */
export type CatalogChange =
  | { readonly _tag: "Resources"; readonly ids: ReadonlyArray<string> }
  | { readonly _tag: "Catalog" }

export const resourcesChanged = (ids: ReadonlyArray<string>): CatalogChange => ({ _tag: "Resources", ids })
export const catalogChanged: CatalogChange = { _tag: "Catalog" }

/**
 * The writes of this process to what routing reads, so an in-memory read model (the capability
 * index of EvidenceReader) drops what they made stale before the next read. The repositories that
 * write those rows (CatalogWritesRepo, ResourceListingRepo, MetricsRepo, CurationRepo) announce each
 * change; other processes' writes are not seen here (the read model bounds its staleness for them).
 */
export interface CatalogChangesShape {
  /**
   * Announces a change the statement just run made. Outside a transaction it is committed, and
   * listeners hear of it at once; inside one (`StoreTransactions`), they hear of it when the
   * outermost transaction ends, since a reader on another connection sees the rows only then.
   */
  readonly changed: (change: CatalogChange) => Effect.Effect<void>
  /** Calls `listener` with every change announced from now on, for as long as the store lives. */
  readonly subscribe: (listener: (change: CatalogChange) => void) => Effect.Effect<void>
  /**
   * Runs `effect` (an outermost transaction) holding the changes announced inside it, and delivers
   * them when it ends, committed or rolled back: a listener only drops what it holds, so a change
   * announced for nothing costs one reload. Inside another such run, the outer one delivers.
   */
  readonly heldUntilEnd: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}

export class CatalogChanges extends Context.Tag("sextant/CatalogChanges")<CatalogChanges, CatalogChangesShape>() {}

/** The changes announced inside the current outermost transaction, held until it ends; null outside one. */
const pendingInTransaction = FiberRef.unsafeMake<Array<CatalogChange> | null>(null)

const make = Effect.sync(() => {
  const listeners: Array<(change: CatalogChange) => void> = []
  const deliver = (changes: ReadonlyArray<CatalogChange>) => {
    for (const change of changes) for (const listener of listeners) listener(change)
  }
  return CatalogChanges.of({
    changed: (change) =>
      Effect.flatMap(FiberRef.get(pendingInTransaction), (pending) =>
        Effect.sync(() => (pending === null ? deliver([change]) : void pending.push(change)))
      ),
    subscribe: (listener) => Effect.sync(() => void listeners.push(listener)),
    heldUntilEnd: (effect) =>
      Effect.flatMap(FiberRef.get(pendingInTransaction), (outer) => {
        if (outer !== null) return effect
        const pending: Array<CatalogChange> = []
        return Effect.locally(effect, pendingInTransaction, pending).pipe(
          Effect.ensuring(Effect.sync(() => deliver(pending)))
        )
      })
  })
})

export const CatalogChangesLive = Layer.effect(CatalogChanges, make)
