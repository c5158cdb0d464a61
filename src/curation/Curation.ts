import { Context, Effect, Layer, Option } from "effect"
import type { CurationAction, CurationResult } from "../domain/curation.js"
import { ConfigManaged, type NotFound, notFound } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import { type Author, CurationRepo } from "../store/CurationRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { StoreTransactions } from "../store/StoreTransactions.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"

/** An author whose reason may be left out: a default naming the action is stored in its place. */
export interface OptionalReason {
  readonly actor: string
  readonly reason: string | undefined
}

export interface CurationShape {
  readonly quarantine: (id: ResourceId, author: Author) => Effect.Effect<CurationResult, NotFound>
  readonly unquarantine: (id: ResourceId, author: OptionalReason) => Effect.Effect<CurationResult, NotFound>
  readonly list: (id: ResourceId, author: OptionalReason) => Effect.Effect<CurationResult, NotFound>
  readonly unlist: (id: ResourceId, author: Author) => Effect.Effect<CurationResult, NotFound>
  /** Deletes a resource; ConfigManaged for one the catalog file would bring back. */
  readonly remove: (id: ResourceId, author: OptionalReason) => Effect.Effect<CurationResult, NotFound | ConfigManaged>
}

/** Reasons an operator may leave out, stored in its place. */
const DEFAULT_REASON = {
  unquarantine: "quarantine lifted by an operator",
  list: "listed by an operator",
  delete: "deleted by an operator"
} as const

const reasoned = (author: OptionalReason, fallback: string): Author => ({
  actor: author.actor,
  reason: author.reason ?? fallback
})

/**
 * Operator curation (docs/decisions.md, Operator curation). Every method takes its author (an
 * operator key's principal, checked by the HTTP layer) and stores the change with actor and reason.
 */
export class Curation extends Context.Tag("sextant/Curation")<Curation, CurationShape>() {
  static readonly Live = Layer.effect(
    Curation,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const { transaction } = yield* StoreTransactions
  const listings = yield* ResourceListingRepo
  const reads = yield* ResourceReadsRepo
  const curation = yield* CurationRepo
  const recorder = yield* EvidenceRecorder

  const found = <A>(id: string) =>
    Option.match({ onNone: () => Effect.fail(notFound("resource", id)), onSome: (a: A) => Effect.succeed(a) })

  /** The answer: the action stored and the resource as it stands now. */
  const answer = (action: CurationAction) =>
    Effect.gen(function* () {
      const record = yield* reads.get(action.resourceId).pipe(Effect.flatMap(found(action.resourceId)))
      const now = yield* curation.curationOf(action.resourceId).pipe(Effect.flatMap(found(action.resourceId)))
      return {
        action,
        resource: {
          status: record.resource.status,
          verificationLevel: record.resource.verificationLevel,
          listing: record.listing,
          curation: now
        }
      } satisfies CurationResult
    })

  /** The status is re-derived after the change is committed (never inside it: the recorder takes its own lock, then the store). */
  const rederive = (id: ResourceId) =>
    Effect.flatMap(reads.get(id), Option.match({ onNone: () => Effect.void, onSome: recorder.rederive }))

  const quarantine = Effect.fn("Curation.quarantine")(function* (id: ResourceId, author: Author) {
    const action = yield* curation.quarantine(id, author).pipe(Effect.flatMap(found<CurationAction>(id)))
    yield* rederive(id)
    return yield* answer(action)
  })

  const unquarantine = Effect.fn("Curation.unquarantine")(function* (id: ResourceId, author: Author) {
    const action = yield* curation.release(id, author).pipe(Effect.flatMap(found<CurationAction>(id)))
    yield* rederive(id)
    return yield* answer(action)
  })

  const setListed = Effect.fn("Curation.setListed")(function* (id: ResourceId, listed: boolean, author: Author) {
    const action = yield* transaction(
      Effect.gen(function* () {
        if (!(yield* listings.setListed(id, listed, author))) return Option.none<CurationAction>()
        yield* listings.setVouched(id, listed)
        return Option.some(yield* curation.logListing(id, listed, author))
      })
    ).pipe(Effect.flatMap(found<CurationAction>(id)))
    return yield* answer(action)
  })

  const remove = Effect.fn("Curation.remove")(function* (id: ResourceId, author: Author) {
    const removal = yield* curation.remove(id, author)
    if (removal._tag === "Missing") return yield* Effect.fail(notFound("resource", id))
    if (removal._tag === "ConfigManaged") {
      return yield* Effect.fail(
        new ConfigManaged({
          message: `resource "${id}" comes from the catalog file, which would bring it back at the next start: remove it from the file, or unlist it`
        })
      )
    }
    return { action: removal.action, resource: null } satisfies CurationResult
  })

  return {
    quarantine,
    unquarantine: (id: ResourceId, author: OptionalReason) =>
      unquarantine(id, reasoned(author, DEFAULT_REASON.unquarantine)),
    list: (id: ResourceId, author: OptionalReason) => setListed(id, true, reasoned(author, DEFAULT_REASON.list)),
    unlist: (id: ResourceId, author: Author) => setListed(id, false, author),
    remove: (id: ResourceId, author: OptionalReason) => remove(id, reasoned(author, DEFAULT_REASON.delete))
  } satisfies CurationShape
})
