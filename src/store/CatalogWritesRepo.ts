import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { type CatalogEntry, ListingHold } from "../domain/resources.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import { CatalogChanges, catalogChanged } from "./CatalogChanges.js"
import { capabilityRows, fingerprint, initialHold, lastBy, lastById, optionRows, resourceRow, WRITE_CHUNK } from "./catalogEntryRows.js"
import { type ListingChange, nowIso, recordListings } from "./listingChanges.js"
import { chunksOf, decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"
import { writeSearchIndex } from "./searchIndex.js"
import { StoreTransactions } from "./StoreTransactions.js"
import { ResourceId } from "../domain/ids.js"

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
  readonly upsertImported: (entries: ReadonlyArray<CatalogEntry>, source: string, change: ListingChange) => Effect.Effect<void>
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
    keys: { readonly origins: ReadonlyArray<string>; readonly principals: ReadonlyArray<string>; readonly payees: ReadonlyArray<string> }
  ) => Effect.Effect<OpenCounts>
}

export class CatalogWritesRepo extends Context.Tag("sextant/CatalogWritesRepo")<CatalogWritesRepo, CatalogWritesRepoShape>() {}

const SourcedRowSchema = Schema.Struct({
  id: ResourceId,
  url: Schema.String,
  source: Schema.String,
  listed: SqlFlag,
  listing_hold: Schema.NullOr(ListingHold)
})
const decodeSourced = decodeRows(SourcedRowSchema)
const toSourced = (r: typeof SourcedRowSchema.Type): SourcedRow => ({ id: r.id, url: r.url, source: r.source, listed: r.listed, hold: r.listing_hold })

const StoredRow = Schema.Struct({ id: Schema.String, source: Schema.String, listed: SqlFlag, catalog_hash: Schema.NullOr(Schema.String) })
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
          .filter(({ hash, before }) => before === undefined || before.source !== source || before.catalog_hash !== hash)
        // Another source taking over a row the catalog file wrote: the stored mark no longer
        // describes the store, so the next start loads the file in full (and takes the row back).
        if (source !== "config" && changed.some(({ before }) => before?.source === "config")) yield* forgetCatalogLoad
        if (changed.length > 0) yield* writeEntries(changed, source, listed, change)
        written += changed.length
      }
      return written
    })

  const writeEntries = (
    changed: ReadonlyArray<{ entry: CatalogEntry; hash: string; before: typeof StoredRow.Type | undefined }>,
    source: string,
    listed: boolean,
    change: ListingChange
  ) =>
    Effect.gen(function* () {
      const at = yield* nowIso
      const ids = changed.map(({ entry }) => entry.resource.id)
      const providers = lastBy(changed.map(({ entry }) => entry.provider), (p) => p.id)
      yield* sql`INSERT INTO providers ${sql.insert(
        providers.map((p) => ({ id: p.id, name: p.name, url: p.url ?? null, contact: p.contact ?? null }))
      )}
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, contact = excluded.contact`
      const hold = listed ? null : initialHold(source)
      const metadata = new Map(changed.map(({ entry: { resource } }) => [resource.id, serviceMetadataOf(resource)] as const))
      const rows = changed.map(({ entry, hash }) =>
        resourceRow(entry, { hash, source, listed, hold, actor: change.actor, at, metadata: metadata.get(entry.resource.id) ?? {} })
      )
      yield* sql`INSERT INTO resources ${sql.insert(rows)}
        ON CONFLICT (id) DO UPDATE SET provider_id = excluded.provider_id, type = excluded.type,
          name = excluded.name, description = excluded.description, url = excluded.url,
          method = excluded.method, mcp_tool = excluded.mcp_tool, updated_at = excluded.updated_at, catalog_hash = excluded.catalog_hash,
          service_name = excluded.service_name, tags = excluded.tags, icon_url = excluded.icon_url,
          listed = CASE WHEN resources.source = excluded.source THEN resources.listed ELSE excluded.listed END,
          listing_hold = CASE WHEN resources.source = excluded.source THEN resources.listing_hold ELSE excluded.listing_hold END,
          trusted = CASE WHEN excluded.source = 'config' THEN 1 WHEN resources.source = excluded.source THEN resources.trusted ELSE 0 END,
          origin = excluded.origin,
          added_by = CASE WHEN resources.source = excluded.source THEN resources.added_by ELSE excluded.added_by END,
          source = excluded.source`
      // The listing the statement above left: what the CASE keeps, or `listed`.
      const moved = changed.flatMap(({ entry, before }) => {
        const isListed = before !== undefined && before.source === source ? before.listed : listed
        return before === undefined || before.listed !== isListed ? [{ id: entry.resource.id, listed: isListed }] : []
      })
      yield* record(moved, change)
      yield* sql`DELETE FROM resource_capabilities WHERE ${sql.in("resource_id", ids)}`
      yield* sql`DELETE FROM payment_options WHERE ${sql.in("resource_id", ids)}`
      const capabilities = changed.flatMap(({ entry }) => capabilityRows(entry))
      const options = changed.flatMap(({ entry }) => optionRows(entry))
      for (const part of chunksOf(capabilities, WRITE_CHUNK)) yield* sql`INSERT INTO resource_capabilities ${sql.insert(part)}`
      for (const part of chunksOf(options, WRITE_CHUNK)) yield* sql`INSERT INTO payment_options ${sql.insert(part)}`
      yield* writeSearchIndex(
        sql,
        changed.map(({ entry: { resource } }) => ({
          resourceId: resource.id,
          name: resource.name,
          capabilities: resource.capabilities,
          tags: metadata.get(resource.id)?.tags ?? [],
          description: resource.description
        }))
      )
      yield* changes.changed(catalogChanged)
    })

  const forgetCatalogLoad = sql`DELETE FROM catalog_loads WHERE name = 'config'`

  const methods: CatalogWritesRepoShape = repository("CatalogWritesRepo", {
    upsertCatalog: (entries: ReadonlyArray<CatalogEntry>, contentKey: string | null = null) =>
      Effect.gen(function* () {
        yield* forgetCatalogLoad
        const written = yield* upsertMany(entries, "config", true, { actor: "config", reason: "named in the catalog file" })
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
        Effect.map((rows): CatalogLoadMark | null => (rows[0] ? { contentKey: rows[0].content_key, entries: rows[0].entries } : null))
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
            WHERE ${sql.in("id", chunk.map((e) => e.resource.id))} AND listed = 0 AND listing_hold = 'source'`
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
    openCounts: (
      source: string,
      keys: { readonly origins: ReadonlyArray<string>; readonly principals: ReadonlyArray<string>; readonly payees: ReadonlyArray<string> }
    ) =>
      Effect.gen(function* () {
        const open = sql.literal("r.trusted = 0 AND r.source <> 'validate'")
        const grouped = (column: "origin" | "added_by", values: ReadonlyArray<string>) =>
          Effect.map(
            Effect.forEach(chunksOf([...new Set(values)], WRITE_CHUNK), (part) =>
              sql<{ k: string; n: unknown }>`SELECT r.${sql.literal(column)} AS k, COUNT(*) AS n FROM resources r
                WHERE ${open} AND ${sql.in(`r.${column}`, part)} GROUP BY r.${sql.literal(column)}`
            ),
            (parts) => new Map(parts.flat().map((row) => [row.k, Number(row.n)] as const))
          )
        const [row] = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM resources r WHERE ${open} AND r.source = ${source}`
        const payees = yield* Effect.map(
          Effect.forEach(chunksOf([...new Set(keys.payees)], WRITE_CHUNK), (part) =>
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
  })
  return methods
})

export const CatalogWritesRepoLive = Layer.effect(CatalogWritesRepo, make)
