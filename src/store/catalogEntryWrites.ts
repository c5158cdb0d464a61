import type { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import type { CatalogEntry } from "../domain/resources.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import { type CatalogChangesShape, catalogChanged } from "./CatalogChanges.js"
import { capabilityRows, initialHold, lastBy, optionRows, resourceRow, WRITE_CHUNK } from "./catalogEntryRows.js"
import { type ListingChange, nowIso, type recordListings } from "./listingChanges.js"
import { chunksOf, SqlFlag } from "./repository.js"
import { writeSearchIndex } from "./searchIndex.js"

/** What a catalog write compares an entry with: the stored row's source, listing and fingerprint. */
export const StoredRow = Schema.Struct({
  id: Schema.String,
  source: Schema.String,
  listed: SqlFlag,
  catalog_hash: Schema.NullOr(Schema.String)
})
export type StoredRow = typeof StoredRow.Type

/**
 * Writes the entries that changed, in bulk: providers, resource rows (the CASEs keep a row's own
 * listing, hold, trust and adder when its source is unchanged), the listing changes that leaves,
 * capabilities, payment options and the search index; then tells the catalog's readers.
 */
export const writeEntries = (
  sql: SqlClient.SqlClient,
  { changes, record }: { readonly changes: CatalogChangesShape; readonly record: ReturnType<typeof recordListings> },
  changed: ReadonlyArray<{ entry: CatalogEntry; hash: string; before: StoredRow | undefined }>,
  source: string,
  listed: boolean,
  change: ListingChange
) =>
  Effect.gen(function* () {
    const at = yield* nowIso
    const ids = changed.map(({ entry }) => entry.resource.id)
    const providers = lastBy(
      changed.map(({ entry }) => entry.provider),
      (p) => p.id
    )
    yield* sql`INSERT INTO providers ${sql.insert(
      providers.map((p) => ({ id: p.id, name: p.name, url: p.url ?? null, contact: p.contact ?? null }))
    )}
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, contact = excluded.contact`
    const hold = listed ? null : initialHold(source)
    const metadata = new Map(
      changed.map(({ entry: { resource } }) => [resource.id, serviceMetadataOf(resource)] as const)
    )
    const rows = changed.map(({ entry, hash }) =>
      resourceRow(entry, {
        hash,
        source,
        listed,
        hold,
        actor: change.actor,
        at,
        metadata: metadata.get(entry.resource.id) ?? {}
      })
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
    for (const part of chunksOf(capabilities, WRITE_CHUNK))
      yield* sql`INSERT INTO resource_capabilities ${sql.insert(part)}`
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
