import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { ResourceId } from "../domain/ids.js"
import { type CatalogEntry, ListingHold } from "../domain/resources.js"
import { CatalogChanges } from "./CatalogChanges.js"
import { fingerprint, lastById, WRITE_CHUNK } from "./catalogEntryRows.js"
import { StoredRow, writeEntries } from "./catalogEntryWrites.js"
import { type ListingChange, nowIso, recordListings } from "./listingChanges.js"
import { countOpen } from "./openCounts.js"
import { chunksOf, decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"
import { StoreTransactions } from "./StoreTransactions.js"

/** A resource row reduced to what ingestion compares: where it came from and whether it is listed. */
export interface SourcedRow {
  readonly id: ResourceId
  readonly url: string
  readonly source: string
  readonly listed: boolean
  readonly hold: ListingHold | null
}

/** The catalog load that last committed: the key of the file content it wrote and how many entries it held. */
export interface CatalogLoadMark {
  readonly contentKey: string
  readonly entries: number
}

/** Untrusted entries by source, and by each origin, principal and payee asked about. */
export interface OpenCounts {
  readonly source: number
  readonly origins: Map<string, number>
  readonly principals: Map<string, number>
  readonly payees: Map<string, number>
}

/**
 * How entries come into the catalog: the catalog file, registrations, validations and imports,
 * written in bulk and only where they changed, and what ingestion reads to decide (rows by URL
 * or source, quota counts).
 */
export interface CatalogWritesRepoShape {
  /**
   * Idempotent: loading the same catalog twice leaves the same rows. The config file lists what
   * it names. `contentKey` marks what was loaded (null: nothing a later start can compare), in
   * the same transaction as the rows, so only a committed load leaves a mark. Answers how many
   * entries were written.
   */
  readonly upsertCatalog: (entries: ReadonlyArray<CatalogEntry>, contentKey?: string | null) => Effect.Effect<number>
  /** The mark of the last committed catalog load, if it left one. */
  readonly lastCatalogLoad: () => Effect.Effect<CatalogLoadMark | null>
  /** A resource a source lists itself (registration, after a healthy probe). */
  readonly upsertListed: (entry: CatalogEntry, source: string, change: ListingChange) => Effect.Effect<number>
  /** A resource found by `/v1/validate` at a URL the catalog does not list: kept, but unlisted. */
  readonly insertUnlisted: (entry: CatalogEntry, source: string, change: ListingChange) => Effect.Effect<number>
  /**
   * Entries from an importing source: new ones unlisted until a healthy probe; known ones keep
   * their listing, except that one the source had stopped listing waits for a probe again.
   */
  readonly upsertImported: (
    entries: ReadonlyArray<CatalogEntry>,
    source: string,
    change: ListingChange
  ) => Effect.Effect<void>
  /** Rows whose URL is one of `urls`, whatever their source: what ingestion must not take over. */
  readonly byUrls: (urls: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<SourcedRow>>
  /** Every row a source brought in, listed or not. */
  readonly bySource: (source: string) => Effect.Effect<ReadonlyArray<SourcedRow>>
  /**
   * What ingestion quotas count (catalog/ingestionQuota.ts): untrusted entries other than
   * validations (which are never probe targets and are pruned), of `source`, and by each of the
   * given origins, principals and payees.
   */
  readonly openCounts: (
    source: string,
    keys: {
      readonly origins: ReadonlyArray<string>
      readonly principals: ReadonlyArray<string>
      readonly payees: ReadonlyArray<string>
    }
  ) => Effect.Effect<OpenCounts>
}

export class CatalogWritesRepo extends Context.Tag("sextant/CatalogWritesRepo")<
  CatalogWritesRepo,
  CatalogWritesRepoShape
>() {}

const SourcedRowSchema = Schema.Struct({
  id: ResourceId,
  url: Schema.String,
  source: Schema.String,
  listed: SqlFlag,
  listing_hold: Schema.NullOr(ListingHold)
})
const decodeSourced = decodeRows(SourcedRowSchema)
const toSourced = (r: typeof SourcedRowSchema.Type): SourcedRow => ({
  id: r.id,
  url: r.url,
  source: r.source,
  listed: r.listed,
  hold: r.listing_hold
})

const decodeStored = decodeRows(StoredRow)

const decodeLoadMark = decodeRows(Schema.Struct({ content_key: Schema.String, entries: SqlNumber }))

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* CatalogChanges
  const { transaction } = yield* StoreTransactions
  const record = recordListings(sql)

  /**
   * Inserts or updates entries from `source`, in bulk, writing only what changed: an entry whose
   * fingerprint and source equal the stored row's is left alone, so re-reading an unchanged
   * catalog costs one read per chunk. A new row, or one that comes from another source now (a
   * validated URL the catalog file names), takes `listed`; a row from the same source keeps its
   * listing, so an operator's unlisting survives a restart. Status and level are earned from
   * evidence: an existing row keeps its own. Returns how many entries were written.
   */
  const upsertMany = (entries: ReadonlyArray<CatalogEntry>, source: string, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      let written = 0
      for (const chunk of chunksOf(lastById(entries), WRITE_CHUNK)) {
        const ids = chunk.map((e) => e.resource.id)
        const stored = new Map(
          (yield* sql`SELECT id, source, listed, catalog_hash FROM resources WHERE ${sql.in("id", ids)}`.pipe(
            Effect.flatMap(decodeStored)
          )).map((r) => [r.id, r] as const)
        )
        const changed = chunk
          .map((entry) => ({ entry, hash: fingerprint(entry), before: stored.get(entry.resource.id) }))
          .filter(
            ({ hash, before }) => before === undefined || before.source !== source || before.catalog_hash !== hash
          )
        // Another source taking over a row the catalog file wrote: the stored mark no longer
        // describes the store, so the next start loads the file in full (and takes the row back).
        if (source !== "config" && changed.some(({ before }) => before?.source === "config")) yield* forgetCatalogLoad
        if (changed.length > 0) yield* writeEntries(sql, { changes, record }, changed, source, listed, change)
        written += changed.length
      }
      return written
    })

  const forgetCatalogLoad = sql`DELETE FROM catalog_loads WHERE name = 'config'`

  const methods: CatalogWritesRepoShape = repository("CatalogWritesRepo", {
    upsertCatalog: (entries: ReadonlyArray<CatalogEntry>, contentKey: string | null = null) =>
      Effect.gen(function* () {
        yield* forgetCatalogLoad
        const written = yield* upsertMany(entries, "config", true, {
          actor: "config",
          reason: "named in the catalog file"
        })
        if (contentKey !== null) {
          yield* sql`INSERT INTO catalog_loads ${sql.insert({
            name: "config",
            content_key: contentKey,
            entries: lastById(entries).length,
            loaded_at: yield* nowIso
          })}`
        }
        return written
      }).pipe(transaction),
    lastCatalogLoad: () =>
      sql`SELECT content_key, entries FROM catalog_loads WHERE name = 'config'`.pipe(
        Effect.flatMap(decodeLoadMark),
        Effect.map((rows): CatalogLoadMark | null =>
          rows[0] ? { contentKey: rows[0].content_key, entries: rows[0].entries } : null
        )
      ),
    upsertListed: (entry: CatalogEntry, source: string, change: ListingChange) =>
      transaction(upsertMany([entry], source, true, change)),
    insertUnlisted: (entry: CatalogEntry, source: string, change: ListingChange) =>
      transaction(upsertMany([entry], source, false, change)),
    upsertImported: (entries: ReadonlyArray<CatalogEntry>, source: string, change: ListingChange) =>
      Effect.gen(function* () {
        yield* upsertMany(entries, source, false, change)
        for (const chunk of chunksOf(entries, WRITE_CHUNK)) {
          yield* sql`UPDATE resources SET listing_hold = 'awaiting_probe'
            WHERE ${sql.in(
              "id",
              chunk.map((e) => e.resource.id)
            )} AND listed = 0 AND listing_hold = 'source'`
        }
      }).pipe(transaction),
    byUrls: (urls: ReadonlyArray<string>) =>
      urls.length === 0
        ? Effect.succeed([] as ReadonlyArray<SourcedRow>)
        : sql`SELECT id, url, source, listed, listing_hold FROM resources WHERE ${sql.in("url", urls)}`.pipe(
            Effect.flatMap(decodeSourced),
            Effect.map((rows) => rows.map(toSourced))
          ),
    bySource: (source: string) =>
      sql`SELECT id, url, source, listed, listing_hold FROM resources WHERE source = ${source} ORDER BY id`.pipe(
        Effect.flatMap(decodeSourced),
        Effect.map((rows) => rows.map(toSourced))
      ),
    openCounts: (source, keys) => countOpen(sql, source, keys)
  })
  return methods
})

export const CatalogWritesRepoLive = Layer.effect(CatalogWritesRepo, make)
