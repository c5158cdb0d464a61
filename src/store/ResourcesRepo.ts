import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import {
  awaitsProbe,
  type CatalogEntry,
  HttpMethod,
  ListingHold,
  type ResourcePaymentOption,
  type ResourceRecord,
  ServiceStatus
} from "../domain/resources.js"
import { McpTool } from "../domain/mcp.js"
import { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { type ServiceMetadata, serviceMetadataOf } from "../domain/serviceMetadata.js"
import { CatalogChanges, catalogChanged, resourcesChanged } from "./CatalogChanges.js"
import { chunksOf, decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"
import type { StoredStanding } from "../domain/metrics.js"
import { MetricsColumns, MetricsRow, toSnapshot } from "./MetricsRepo.js"
import { rankPage, SearchTuning, type SearchPosition, textQuery, writeSearchIndex } from "./searchIndex.js"
import { sortableId } from "./sortableId.js"
import { StoreTransactions } from "./StoreTransactions.js"

const ResourceRow = Schema.Struct({
  id: Schema.String,
  provider_id: Schema.String,
  provider_name: Schema.String,
  provider_url: Schema.NullOr(Schema.String),
  provider_contact: Schema.NullOr(Schema.String),
  type: Schema.Literal("http", "mcp"),
  name: Schema.String,
  description: Schema.String,
  url: Schema.String,
  method: HttpMethod,
  status: ServiceStatus,
  verification_level: SqlNumber,
  listed: SqlFlag,
  source: Schema.String,
  trusted: SqlFlag,
  service_name: Schema.NullOr(Schema.String),
  tags: Schema.NullOr(Schema.parseJson(Schema.Array(Schema.String))),
  icon_url: Schema.NullOr(Schema.String),
  mcp_tool: Schema.NullOr(Schema.parseJson(McpTool))
})

const CapabilityRow = Schema.Struct({ resource_id: Schema.String, capability: Schema.String })

const OptionRow = Schema.Struct({
  resource_id: Schema.String,
  network: StellarNetwork,
  scheme: PaymentScheme,
  asset: Schema.String,
  amount: Schema.String,
  amount_usd: SqlNumber,
  max_amount: Schema.NullOr(Schema.String),
  max_amount_usd: Schema.NullOr(SqlNumber),
  pay_to: Schema.String
})

const toOption = (row: Omit<typeof OptionRow.Type, "resource_id">): ResourcePaymentOption => ({
  network: row.network,
  scheme: row.scheme,
  asset: row.asset,
  amount: row.amount,
  amountUsd: row.amount_usd,
  ...(row.max_amount !== null ? { maxAmount: row.max_amount } : {}),
  ...(row.max_amount_usd !== null ? { maxAmountUsd: row.max_amount_usd } : {}),
  payTo: row.pay_to
})

const decodeResources = decodeRows(ResourceRow)
const encodeMcpTool = Schema.encodeSync(Schema.parseJson(McpTool))
const decodeCapabilities = decodeRows(CapabilityRow)
const decodeOptions = decodeRows(OptionRow)

/** Who changed a listing and why; an unlisting also says what may list it again (default "operator"). */
export interface ListingChange {
  readonly actor: string
  readonly reason: string
  readonly hold?: ListingHold
}

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

/** A resource row reduced to what ingestion compares: where it came from and whether it is listed. */
export interface SourcedRow {
  readonly id: string
  readonly url: string
  readonly source: string
  readonly listed: boolean
  readonly hold: ListingHold | null
}

/** Filters of the x402 discovery listing; every one optional. */
export interface ListedPageQuery {
  readonly type?: string | undefined
  readonly network?: string | undefined
  readonly scheme?: string | undefined
  readonly payTo?: string | undefined
  readonly offset: number
  readonly limit: number
}

/** The catalog filters of a search (the quality filters need evidence, which is not the catalog's). */
export interface SearchFilters {
  readonly query?: string | undefined
  readonly capability?: string | undefined
  readonly scheme?: string | undefined
  readonly network?: string | undefined
  readonly asset?: string | undefined
  readonly maxPriceUsd?: number | undefined
  /** The x402 bazaar search's filters: resource type, payee, and where the resource came from. */
  readonly type?: string | undefined
  readonly payTo?: string | undefined
  readonly source?: string | undefined
}

export type { SearchPosition }

/** A route candidate's row: the resource, its provider and quarantine, and its metrics columns (all null when never measured). */
const CandidateRow = Schema.Struct({
  ...ResourceRow.fields,
  quarantined_by: Schema.NullOr(Schema.String),
  quarantine_reason: Schema.NullOr(Schema.String),
  quarantined_at: Schema.NullOr(Schema.String),
  resource_id: Schema.NullOr(Schema.String)
})
const decodeCandidates = decodeRows(CandidateRow)
const decodeMetricsRows = decodeRows(Schema.NullOr(MetricsRow))

const toRecord = (r: typeof ResourceRow.Type, capabilities: ReadonlyArray<string>, options: ReadonlyArray<ResourcePaymentOption>): ResourceRecord => ({
  resource: {
    id: r.id,
    type: r.type,
    name: r.name,
    description: r.description,
    url: r.url,
    method: r.method,
    ...(r.mcp_tool !== null ? { mcp: r.mcp_tool } : {}),
    capabilities,
    status: r.status,
    verificationLevel: r.verification_level,
    ...(r.service_name !== null ? { serviceName: r.service_name } : {}),
    ...(r.tags !== null ? { tags: r.tags } : {}),
    ...(r.icon_url !== null ? { iconUrl: r.icon_url } : {})
  },
  provider: {
    id: r.provider_id,
    name: r.provider_name,
    ...(r.provider_url !== null ? { url: r.provider_url } : {}),
    ...(r.provider_contact !== null ? { contact: r.provider_contact } : {})
  },
  paymentOptions: options,
  listing: { listed: r.listed, source: r.source, trusted: r.trusted }
})

/** A record with the stored standing its evidence is derived from. */
export interface RecordWithStanding {
  readonly record: ResourceRecord
  readonly standing: StoredStanding
}


const StateRow = Schema.Struct({
  id: Schema.String,
  listed: SqlFlag,
  listing_hold: Schema.NullOr(ListingHold),
  unhealthy_since_ms: Schema.NullOr(SqlNumber)
})
const SourcedRowSchema = Schema.Struct({
  id: Schema.String,
  url: Schema.String,
  source: Schema.String,
  listed: SqlFlag,
  listing_hold: Schema.NullOr(ListingHold)
})
const decodeState = decodeRows(StateRow)
const decodeSourced = decodeRows(SourcedRowSchema)
const toSourced = (r: typeof SourcedRowSchema.Type): SourcedRow => ({
  id: r.id,
  url: r.url,
  source: r.source,
  listed: r.listed,
  hold: r.listing_hold
})

/** Why a new unlisted row from `source` is unlisted. */
const initialHold = (source: string): ListingHold =>
  awaitsProbe(source) ? "awaiting_probe" : source === "validate" ? "validate" : "operator"

/** Rows per bulk statement: far below both drivers' bound-parameter limits at 15 columns. */
const WRITE_CHUNK = 500

/** The last of each key, in first-seen order: what writing the items one after another would leave. */
const lastBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string): Array<A> => [...new Map(items.map((a) => [key(a), a])).values()]
const lastById = (entries: ReadonlyArray<CatalogEntry>) => lastBy(entries, (e) => e.resource.id)

/**
 * What the store keeps of an entry, fingerprinted: equal fingerprints mean nothing to write.
 * Capabilities as a set, since the store keeps them so. The MCP tool only when there is one, so
 * the fingerprints of http resources stored before it existed still match.
 */
const fingerprint = ({ resource: r, provider: p, paymentOptions }: CatalogEntry): string =>
  createHash("sha256")
    .update(
      JSON.stringify([
        [r.id, r.type, r.name, r.description, r.url, r.method, [...new Set(r.capabilities)].sort(), ...(r.mcp ? [encodeMcpTool(r.mcp)] : [])],
        [r.serviceName ?? null, r.tags ?? null, r.iconUrl ?? null],
        [p.id, p.name, p.url ?? null, p.contact ?? null],
        paymentOptions.map((o) => [o.network, o.scheme, o.asset, o.amount, o.amountUsd, o.maxAmount ?? null, o.maxAmountUsd ?? null, o.payTo])
      ])
    )
    .digest("base64url")

/** The service metadata columns of migration 0030: null for each field the sanitiser dropped. */
const metadataColumns = (m: ServiceMetadata) => ({
  service_name: m.serviceName ?? null,
  tags: m.tags === undefined ? null : JSON.stringify(m.tags),
  icon_url: m.iconUrl ?? null
})

const StoredRow = Schema.Struct({ id: Schema.String, source: Schema.String, listed: SqlFlag, catalog_hash: Schema.NullOr(Schema.String) })
const decodeStored = decodeRows(StoredRow)

/** The catalog load that last committed: the key of the file content it wrote and how many entries it held. */
export interface CatalogLoadMark {
  readonly contentKey: string
  readonly entries: number
}
const decodeLoadMark = decodeRows(Schema.Struct({ content_key: Schema.String, entries: SqlNumber }))

const groupBy = <A>(rows: ReadonlyArray<A>, key: (a: A) => string) => {
  const map = new Map<string, Array<A>>()
  for (const row of rows) {
    const k = key(row)
    const list = map.get(k)
    if (list) list.push(row)
    else map.set(k, [row])
  }
  return map
}

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const tuning = yield* SearchTuning
  const changes = yield* CatalogChanges
  const { transaction } = yield* StoreTransactions
  const now = () => new Date().toISOString()
  const probeTargetRule = sql.literal("(r.listed = 1 OR r.listing_hold IN ('awaiting_probe', 'unhealthy') OR r.source = 'config')")

  const listedOnly = sql.literal("r.listed = 1")

  /** Loads full records for the resource rows selected by `where` (a SQL fragment over `r`), by id, optionally one page. */
  const load = (where: Statement.Fragment, page?: { readonly offset?: number; readonly limit: number }) =>
    Effect.gen(function* () {
      const rows = yield* sql`
        SELECT r.id, r.provider_id, p.name AS provider_name, p.url AS provider_url, p.contact AS provider_contact,
               r.type, r.name, r.description, r.url, r.method, r.status, r.verification_level, r.listed, r.source, r.trusted,
               r.service_name, r.tags, r.icon_url, r.mcp_tool
        FROM resources r JOIN providers p ON p.id = r.provider_id
        WHERE ${where}
        ORDER BY r.id ${page ? sql`LIMIT ${page.limit} OFFSET ${page.offset ?? 0}` : sql``}`.pipe(Effect.flatMap(decodeResources))
      if (rows.length === 0) return [] as Array<ResourceRecord>
      const ids = rows.map((r) => r.id)
      const caps = yield* sql`
        SELECT resource_id, capability FROM resource_capabilities WHERE ${sql.in("resource_id", ids)} ORDER BY capability`.pipe(
        Effect.flatMap(decodeCapabilities)
      )
      const options = yield* sql`
        SELECT * FROM payment_options WHERE ${sql.in("resource_id", ids)} ORDER BY resource_id, option_index`.pipe(
        Effect.flatMap(decodeOptions)
      )
      const capsBy = groupBy(caps, (c) => c.resource_id)
      const optionsBy = groupBy(options, (o) => o.resource_id)
      return rows.map((r) =>
        toRecord(
          r,
          (capsBy.get(r.id) ?? []).map((c) => c.capability),
          (optionsBy.get(r.id) ?? []).map(toOption)
        )
      )
    })

  // The metrics columns by name (this code's own constants): the table has columns routing does not read.
  const metricColumns = sql.literal(Object.keys(MetricsColumns).map((c) => `m.${c}`).join(", "))

  /**
   * The listed resources with a capability, each with its stored standing (status, level,
   * quarantine, metrics row), read from the capability index: the candidates with their metrics
   * rows in one query, their capabilities and payment options in one query each. What a route needs.
   */
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

  /** The hold a listing change leaves: none once listed, else the change's ("operator" by default). */
  const holdAfter = (listed: boolean, change: { readonly hold?: ListingHold | null }) => (listed ? null : (change.hold ?? "operator"))

  const writeListing = (id: string, wasListed: boolean, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      const hold = holdAfter(listed, change)
      yield* sql`UPDATE resources SET listed = ${listed ? 1 : 0}, listing_hold = ${hold}, updated_at = ${now()} WHERE id = ${id}`
      if (wasListed !== listed) {
        yield* recordListings([{ id, listed }], change)
        yield* changes.changed(catalogChanged)
      }
    })


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
      const at = now()
      const ids = changed.map(({ entry }) => entry.resource.id)
      const providers = lastBy(changed.map(({ entry }) => entry.provider), (p) => p.id)
      yield* sql`INSERT INTO providers ${sql.insert(
        providers.map((p) => ({ id: p.id, name: p.name, url: p.url ?? null, contact: p.contact ?? null }))
      )}
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, contact = excluded.contact`
      const hold = listed ? null : initialHold(source)
      const metadata = new Map(changed.map(({ entry: { resource } }) => [resource.id, serviceMetadataOf(resource)] as const))
      const rows = changed.map(({ entry: { resource, provider }, hash }) => ({
        id: resource.id,
        provider_id: provider.id,
        type: resource.type,
        name: resource.name,
        description: resource.description,
        url: resource.url,
        method: resource.method,
        mcp_tool: resource.mcp === undefined ? null : encodeMcpTool(resource.mcp),
        status: "DISCOVERED",
        verification_level: 0,
        source,
        listed: listed ? 1 : 0,
        listing_hold: hold,
        trusted: source === "config" ? 1 : 0,
        origin: URL.canParse(resource.url) ? new URL(resource.url).origin : null,
        added_by: source === "config" ? null : change.actor,
        catalog_hash: hash,
        ...metadataColumns(metadata.get(resource.id) ?? {}),
        created_at: at,
        updated_at: at
      }))
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
      yield* recordListings(moved, change)
      yield* sql`DELETE FROM resource_capabilities WHERE ${sql.in("resource_id", ids)}`
      yield* sql`DELETE FROM payment_options WHERE ${sql.in("resource_id", ids)}`
      const capabilities = changed.flatMap(({ entry: { resource } }) =>
        [...new Set(resource.capabilities)].map((capability) => ({ resource_id: resource.id, capability }))
      )
      const options = changed.flatMap(({ entry }) =>
        entry.paymentOptions.map((o, index) => ({
          resource_id: entry.resource.id,
          option_index: index,
          network: o.network,
          scheme: o.scheme,
          asset: o.asset,
          amount: o.amount,
          amount_usd: o.amountUsd,
          max_amount: o.maxAmount ?? null,
          max_amount_usd: o.maxAmountUsd ?? null,
          pay_to: o.payTo
        }))
      )
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

  /** Stored changes of listing, one statement for many resources. */
  const recordListings = (moved: ReadonlyArray<{ id: string; listed: boolean }>, change: ListingChange) => {
    if (moved.length === 0) return Effect.void
    const at = new Date()
    return sql`INSERT INTO listing_changes ${sql.insert(
      moved.map((m) => ({
        id: sortableId("ls", at.getTime()),
        resource_id: m.id,
        listed: m.listed ? 1 : 0,
        actor: change.actor,
        reason: change.reason,
        at: at.toISOString(),
        at_ms: at.getTime()
      }))
    )}`.pipe(Effect.asVoid)
  }


  return repository("ResourcesRepo", {
    /**
     * Idempotent: loading the same catalog twice leaves the same rows. The config file lists what
     * it names. `contentKey` marks what was loaded (null: nothing a later start can compare), in
     * the same transaction as the rows, so only a committed load leaves a mark. Answers how many
     * entries were written.
     */
    upsertCatalog: (entries: ReadonlyArray<CatalogEntry>, contentKey: string | null = null) =>
      Effect.gen(function* () {
        yield* forgetCatalogLoad
        const written = yield* upsertMany(entries, "config", true, { actor: "config", reason: "named in the catalog file" })
        if (contentKey !== null) {
          yield* sql`INSERT INTO catalog_loads ${sql.insert({
            name: "config",
            content_key: contentKey,
            entries: lastById(entries).length,
            loaded_at: now()
          })}`
        }
        return written
      }).pipe(transaction),
    /** The mark of the last committed catalog load, if it left one. */
    lastCatalogLoad: () =>
      sql`SELECT content_key, entries FROM catalog_loads WHERE name = 'config'`.pipe(
        Effect.flatMap(decodeLoadMark),
        Effect.map((rows): CatalogLoadMark | null => (rows[0] ? { contentKey: rows[0].content_key, entries: rows[0].entries } : null))
      ),
    /** A resource a source lists itself (registration, after a healthy probe). */
    upsertListed: (entry: CatalogEntry, source: string, change: ListingChange) =>
      transaction(upsertMany([entry], source, true, change)),
    /** A resource found by `/v1/validate` at a URL the catalog does not list: kept, but unlisted. */
    insertUnlisted: (entry: CatalogEntry, source: string, change: ListingChange) =>
      transaction(upsertMany([entry], source, false, change)),
    /**
     * What the probe schedule visits: listed resources, unlisted ones a healthy probe may list
     * (imported, ingested, delisted as unhealthy), and everything the config file names. A URL
     * someone validated once, or one a source stopped listing, is probed only on demand.
     */
    probeTargets: () => load(probeTargetRule),
    /**
     * Deletes the unlisted resources `/v1/validate` created that nobody has validated since
     * `cutoffMs` (their observations, metrics and transitions go with them); one an operator
     * quarantined stays, with its reason. Answers how many went.
     */
    pruneUnlisted: (cutoffMs: number) =>
      sql<{ id: string }>`DELETE FROM resources
        WHERE source = 'validate' AND listed = 0 AND quarantined_by IS NULL
          AND updated_at < ${new Date(cutoffMs).toISOString()}
          AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.resource_id = resources.id AND o.observed_at_ms >= ${cutoffMs})
        RETURNING id`.pipe(Effect.map((rows) => rows.length)),
    /** What buyers see: the listed resources. Every one: for whole-catalog jobs, never for an answer. */
    list: () => load(listedOnly),
    /** Listed resources in id order after `afterId`, at most `limit`: a page of `GET /v1/resources`. */
    listPage: (afterId: string | null, limit: number) =>
      load(afterId === null ? listedOnly : sql.and([listedOnly, sql`r.id > ${afterId}`]), { limit }),
    /**
     * Listed resources matching a search's text and catalog filters, by relevance then id, after
     * `after` (the last hit of the previous page), at most `limit`, relevance attached. Text goes
     * through the search index (`searchIndex.ts`); payment filters must hold on one option.
     */
    searchPage: (filters: SearchFilters, after: SearchPosition | null, limit: number) =>
      Effect.gen(function* () {
        const query = filters.query?.trim() ?? ""
        const text = textQuery(sql, query, tuning)
        // A query without a single word ("-") matches nothing, as the ranking rule has it.
        if (query !== "" && text === null) return []
        const optionFilters = [
          filters.scheme !== undefined ? sql`o.scheme = ${filters.scheme}` : null,
          filters.network !== undefined ? sql`o.network = ${filters.network}` : null,
          filters.asset !== undefined ? sql`o.asset = ${filters.asset}` : null,
          filters.payTo !== undefined ? sql`o.pay_to = ${filters.payTo}` : null,
          // Worst-case spend, as `worstCaseUsd` computes it.
          filters.maxPriceUsd !== undefined
            ? sql`(CASE WHEN o.scheme = 'upto' THEN COALESCE(o.max_amount_usd, o.amount_usd) ELSE o.amount_usd END) <= ${filters.maxPriceUsd}`
            : null
        ].filter((f) => f !== null)
        const where = sql.and([
          listedOnly,
          ...(filters.type !== undefined ? [sql`r.type = ${filters.type}`] : []),
          ...(filters.source !== undefined ? [sql`r.source = ${filters.source}`] : []),
          ...(filters.capability !== undefined
            ? [sql`r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${filters.capability})`]
            : []),
          sql`EXISTS (SELECT 1 FROM payment_options o WHERE o.resource_id = r.id ${optionFilters.length > 0 ? sql`AND ${sql.and(optionFilters)}` : sql``})`
        ])
        const ranked = yield* rankPage(sql, text, where, after, limit, tuning)
        if (ranked.length === 0) return []
        const records = new Map((yield* load(sql.in("r.id", ranked.map((r) => r.id)))).map((r) => [r.resource.id, r] as const))
        return ranked.flatMap(({ id, relevance }) => {
          const record = records.get(id)
          return record ? [{ record, relevance }] : []
        })
      }),
    get: (id: string) => load(sql`r.id = ${id}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    /** The records of `ids` that exist, by id. */
    getMany: (ids: ReadonlyArray<string>) => (ids.length === 0 ? Effect.succeed([]) : load(sql.in("r.id", ids))),
    /**
     * The ids of what the probe schedule visits (see probeTargets) after `afterId`, at most `limit`,
     * by id, each with its probe lane (trusted entries apart), without loading the records.
     */
    probeTargetIds: (afterId: string, limit: number) =>
      sql<{ id: string; trusted: unknown }>`SELECT r.id, r.trusted FROM resources r
        WHERE ${probeTargetRule} AND r.id > ${afterId} ORDER BY r.id LIMIT ${limit}`.pipe(
        Effect.map((rows) => rows.map((r) => ({ id: r.id, lane: Number(r.trusted) === 1 ? ("trusted" as const) : ("open" as const) })))
      ),
    /** Since when each of `ids` has been unhealthy (absent: healthy, or no such resource). */
    unhealthySince: (ids: ReadonlyArray<string>) =>
      ids.length === 0
        ? Effect.succeed(new Map<string, number>())
        : sql<{ id: string; unhealthy_since_ms: unknown }>`SELECT id, unhealthy_since_ms FROM resources
            WHERE ${sql.in("id", ids)} AND unhealthy_since_ms IS NOT NULL`.pipe(
            Effect.map((rows) => new Map(rows.map((r) => [r.id, Number(r.unhealthy_since_ms)] as const)))
          ),
    /**
     * Deletes untrusted entries (not the catalog file's, not operator-listed, not validations,
     * which have their own retention) unhealthy since before `cutoffMs`, with their observations,
     * metrics and transitions; one an operator quarantined stays, with its reason. Answers how many went.
     */
    retireUnhealthy: (cutoffMs: number) =>
      sql<{ id: string }>`DELETE FROM resources
        WHERE trusted = 0 AND source <> 'validate' AND quarantined_by IS NULL
          AND unhealthy_since_ms IS NOT NULL AND unhealthy_since_ms < ${cutoffMs}
        RETURNING id`.pipe(
        Effect.tap((rows) => (rows.length === 0 ? Effect.void : changes.changed(catalogChanged))),
        Effect.map((rows) => rows.length)
      ),
    /** The listed resource at `url` that pays `payTo` (the first by id), if any: the resource a settle names. */
    namedPayee: (url: string, payTo: string) =>
      sql<{ id: string }>`SELECT r.id FROM resources r WHERE r.url = ${url} AND r.listed = 1
        AND r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo}) ORDER BY r.id LIMIT 1`.pipe(
        Effect.map((rows) => rows[0]?.id ?? null)
      ),
    /** The resource at `url` (with `toolName`: the one selling that MCP tool there; one server's tools share its URL), if any. */
    findByUrl: (url: string, toolName?: string) =>
      load(toolName === undefined ? sql`r.url = ${url}` : sql`r.url = ${url} AND json_extract(r.mcp_tool, '$.toolName') = ${toolName}`).pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]))
      ),
    byCapability: (capability: string) =>
      load(sql`${listedOnly} AND r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${capability})`),
    byCapabilityWithStandings,
    /**
     * The resources that are evidence about a payee: the listed ones paying it, and any an operator
     * quarantined, listed or not, so unlisting a quarantined entry never lifts its refusal.
     */
    byPayTo: (payTo: string) =>
      load(sql`(r.listed = 1 OR r.quarantined_by IS NOT NULL) AND r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`),
    /**
     * Lists or unlists a resource, storing the change when the listing moved; an unlisting's hold
     * (default "operator": no probe lists it again) is set even when it was unlisted already.
     * False when no such resource exists.
     */
    setListed: (id: string, listed: boolean, change: ListingChange) =>
      Effect.gen(function* () {
        const rows = yield* sql<{ listed: unknown }>`SELECT listed FROM resources WHERE id = ${id}`
        if (rows[0] === undefined) return false
        yield* writeListing(id, Number(rows[0].listed) === 1, listed, change)
        return true
      }).pipe(transaction),
    /**
     * An operator's listing vouches for the entry (docs/trust.md); unlisting takes that back, but
     * an entry of the catalog file stays trusted.
     */
    setVouched: (id: string, vouched: boolean) =>
      sql`UPDATE resources SET trusted = CASE WHEN source = 'config' THEN 1 ELSE ${vouched ? 1 : 0} END WHERE id = ${id}`.pipe(
        Effect.zipRight(changes.changed(catalogChanged))
      ),
    /**
     * After a batch of probes: reads their resources' listings in one query, lets each `decide`
     * (the probe rule, docs/decisions.md) say what changes, and stores only the changes. The caller
     * runs it in a transaction (the recorder's batch, after the observations) so an operator's
     * concurrent change is not lost. A resource probed twice in the batch is decided in order.
     */
    afterProbes: (probes: ReadonlyArray<{ readonly id: string; readonly decide: (state: ListingState) => ListingStep }>, actor: string) =>
      Effect.gen(function* () {
        if (probes.length === 0) return
        const rows = yield* sql`SELECT id, listed, listing_hold, unhealthy_since_ms FROM resources
          WHERE ${sql.in("id", [...new Set(probes.map((p) => p.id))])}`.pipe(Effect.flatMap(decodeState))
        const states = new Map(rows.map((r) => [r.id, { listed: r.listed, hold: r.listing_hold, unhealthySinceMs: r.unhealthy_since_ms }]))
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
    /** One page of listed resources, by id, with the total matching the filters (x402 discovery). */
    listedPage: (query: ListedPageQuery) =>
      Effect.gen(function* () {
        const optionFilters = [
          query.network !== undefined ? sql`network = ${query.network}` : null,
          query.scheme !== undefined ? sql`scheme = ${query.scheme}` : null,
          query.payTo !== undefined ? sql`pay_to = ${query.payTo}` : null
        ].filter((f) => f !== null)
        const where = sql.and([
          listedOnly,
          ...(query.type !== undefined ? [sql`r.type = ${query.type}`] : []),
          ...(optionFilters.length > 0
            ? [sql`r.id IN (SELECT resource_id FROM payment_options WHERE ${sql.and(optionFilters)})`]
            : [])
        ])
        const [count] = yield* sql<{ n: unknown }>`SELECT COUNT(*) AS n FROM resources r WHERE ${where}`
        const records = yield* load(where, { offset: query.offset, limit: query.limit })
        return { records, total: Number(count?.n ?? 0) }
      }),
    /** Rows whose URL is one of `urls`, whatever their source: what ingestion must not take over. */
    byUrls: (urls: ReadonlyArray<string>) =>
      urls.length === 0
        ? Effect.succeed([] as ReadonlyArray<SourcedRow>)
        : sql`SELECT id, url, source, listed, listing_hold FROM resources WHERE ${sql.in("url", urls)}`.pipe(
            Effect.flatMap(decodeSourced),
            Effect.map((rows) => rows.map(toSourced))
          ),
    /**
     * What ingestion quotas count (catalog/ingestionQuota.ts): untrusted entries other than
     * validations (which are never probe targets and are pruned), of `source`, and by each of the
     * given origins, principals and payees.
     */
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
      }),
    /** Every row a source brought in, listed or not. */
    bySource: (source: string) =>
      sql`SELECT id, url, source, listed, listing_hold FROM resources WHERE source = ${source} ORDER BY id`.pipe(
        Effect.flatMap(decodeSourced),
        Effect.map((rows) => rows.map(toSourced))
      ),
    /**
     * Entries from an importing source: new ones unlisted until a healthy probe; known ones keep
     * their listing, except that one the source had stopped listing waits for a probe again.
     */
    upsertImported: (entries: ReadonlyArray<CatalogEntry>, source: string, change: ListingChange) =>
      Effect.gen(function* () {
        yield* upsertMany(entries, source, false, change)
        for (const chunk of chunksOf(entries, WRITE_CHUNK)) {
          yield* sql`UPDATE resources SET listing_hold = 'awaiting_probe'
            WHERE ${sql.in("id", chunk.map((e) => e.resource.id))} AND listed = 0 AND listing_hold = 'source'`
        }
      }).pipe(transaction),
    setStatus: (id: string, status: ServiceStatus, level: number) =>
      sql`UPDATE resources SET status = ${status}, verification_level = ${level}, updated_at = ${now()} WHERE id = ${id}`.pipe(
        Effect.zipRight(changes.changed(resourcesChanged([id])))
      )
  })
})

export class ResourcesRepo extends Context.Tag("sextant/ResourcesRepo")<
  ResourcesRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(ResourcesRepo, make)
}
