import { Clock, Deferred, Effect, Exit } from "effect"
import type { CatalogChange } from "../store/CatalogChanges.js"
import type { RecordWithStanding } from "../store/RouteCandidatesRepo.js"

/** The listed resources offering one capability with their stored standings, and when they were read. */
export interface CapabilityRead {
  readonly candidates: ReadonlyArray<RecordWithStanding>
  readonly readAtMs: number
}

/** A read of the store under way: the change count when it started. */
export interface LoadTicket {
  readonly capability: string
  readonly startedAt: number
}

interface Entry {
  readonly read: CapabilityRead
  readonly ids: ReadonlySet<string>
}

const touches = (change: CatalogChange, ids: ReadonlySet<string>) =>
  change._tag === "Catalog" || change.ids.some((id) => ids.has(id))

/**
 * The route read model: what `forCapability` read last, by capability, held in memory. Reads are
 * answered from it while they are younger than `ttlMs` and no change announced since (this
 * process's writes, CatalogChanges) concerns them; the TTL bounds how long another instance's
 * writes go unseen. Only the rows are held: evidence is derived from them at each read's own time.
 *
 * A read of the store that a change overtook (the change concerns what it read, or may add
 * candidates) is answered but not kept, since it may have read the rows before that change's
 * commit. A changes log back to the oldest read under way tells which ones did. The class is
 * state only; `heldReads` reads the store through it.
 */
export class CapabilityIndex {
  private readonly entries = new Map<string, Entry>()
  private readonly underWay = new Map<LoadTicket, true>()
  private log: Array<{ readonly at: number; readonly change: CatalogChange }> = []
  /** How many changes were announced so far. */
  private changes = 0

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number
  ) {}

  /** How many capabilities are held, current or not yet dropped. */
  get held(): number {
    return this.entries.size
  }

  /** The held read of `capability`, if still current at `nowMs`. */
  current(capability: string, nowMs: number): CapabilityRead | undefined {
    const entry = this.entries.get(capability)
    if (entry === undefined) return undefined
    if (nowMs - entry.read.readAtMs >= this.ttlMs || nowMs < entry.read.readAtMs) {
      this.entries.delete(capability)
      return undefined
    }
    return entry.read
  }

  /** Drops what `change` made stale; remembered while reads that started before it are under way. */
  apply(change: CatalogChange): void {
    this.changes++
    if (change._tag === "Catalog") this.entries.clear()
    else for (const [capability, entry] of this.entries) if (touches(change, entry.ids)) this.entries.delete(capability)
    if (this.underWay.size > 0) this.log.push({ at: this.changes, change })
  }

  /** Starts a read of the store. */
  begin(capability: string): LoadTicket {
    const ticket = { capability, startedAt: this.changes }
    this.underWay.set(ticket, true)
    return ticket
  }

  /** True when a change was announced since `ticket` began: a read that starts now may see more. */
  overtaken(ticket: LoadTicket): boolean {
    return this.changes !== ticket.startedAt
  }

  /** Ends a read of the store; keeps it unless a change announced since it began concerns it. */
  finish(ticket: LoadTicket, read: CapabilityRead): void {
    this.underWay.delete(ticket)
    const ids = new Set(read.candidates.map((c) => c.record.resource.id))
    const overtaken = this.log.some(({ at, change }) => at > ticket.startedAt && touches(change, ids))
    if (!overtaken) {
      this.entries.delete(ticket.capability)
      this.dropExpired(read.readAtMs)
      // Oldest first out: a flood of distinct capabilities cannot grow the map without bound.
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!)
      this.entries.set(ticket.capability, { read, ids })
    }
    this.trimLog()
  }

  /** Ends a read of the store that failed: nothing is kept. */
  abandon(ticket: LoadTicket): void {
    this.underWay.delete(ticket)
    this.trimLog()
  }

  /**
   * Drops expired reads from the oldest on (the map is in the order reads were kept), so memory
   * holds about the capabilities routed in the last TTL, not every one ever routed.
   */
  private dropExpired(nowMs: number): void {
    for (const [capability, entry] of this.entries) {
      if (nowMs - entry.read.readAtMs < this.ttlMs) return
      this.entries.delete(capability)
    }
  }

  /** Keeps only the changes a read under way may still have to be judged against. */
  private trimLog(): void {
    const oldest = Math.min(...[...this.underWay.keys()].map((t) => t.startedAt))
    this.log = this.log.filter(({ at }) => at > oldest)
  }
}

/**
 * Reads of capabilities through `index`: the held rows while current; else a read of the store
 * under way that no change has overtaken (so an expiry under load costs one read, not one per
 * request); else a new read with `read`.
 */
export const heldReads = (
  index: CapabilityIndex,
  read: (capability: string) => Effect.Effect<ReadonlyArray<RecordWithStanding>>
) => {
  const underWay = new Map<string, { readonly ticket: LoadTicket; readonly done: Deferred.Deferred<CapabilityRead> }>()

  // Uninterruptible: reads waiting on it must get an answer even if the request that started it goes away.
  const readStore = (capability: string) =>
    Effect.uninterruptible(
      Effect.gen(function* () {
        const ticket = index.begin(capability)
        const done = yield* Deferred.make<CapabilityRead>()
        underWay.set(capability, { ticket, done })
        const readAtMs = yield* Clock.currentTimeMillis
        const found = yield* Effect.exit(read(capability))
        if (underWay.get(capability)?.ticket === ticket) underWay.delete(capability)
        if (Exit.isFailure(found)) {
          index.abandon(ticket)
          yield* Deferred.failCause(done, found.cause)
          return yield* Effect.failCause(found.cause)
        }
        const result = { candidates: found.value, readAtMs }
        index.finish(ticket, result)
        yield* Deferred.succeed(done, result)
        return result
      })
    )

  return (capability: string, nowMs: number): Effect.Effect<CapabilityRead> =>
    Effect.suspend(() => {
      const held = index.current(capability, nowMs)
      if (held !== undefined) return Effect.succeed(held)
      const pending = underWay.get(capability)
      return pending !== undefined && !index.overtaken(pending.ticket)
        ? Deferred.await(pending.done)
        : readStore(capability)
    })
}
