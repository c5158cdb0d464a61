import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import {
  awaitsProbe,
  type CatalogEntry,
  HttpMethod,
  ListingHold,
  type ResourcePaymentOption,
  type ResourceRecord,
  ServiceStatus
} from "../domain/resources.js"
import { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { decodeRows, repository, SqlFlag, SqlNumber } from "./repository.js"
import { sortableId } from "./sortableId.js"

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
  source: Schema.String
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

const toOption = (row: typeof OptionRow.Type): ResourcePaymentOption => ({
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

const StateRow = Schema.Struct({
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
  const now = () => new Date().toISOString()
  const probeTargetRule = sql.literal("(r.listed = 1 OR r.listing_hold IN ('awaiting_probe', 'unhealthy') OR r.source = 'config')")

  /** Loads full records for the resource rows selected by `where` (a SQL fragment over `r`), by id, optionally one page. */
  const load = (
    where: ReturnType<typeof sql.literal> | ReturnType<typeof sql>,
    page?: { readonly offset: number; readonly limit: number }
  ) =>
    Effect.gen(function* () {
      const rows = yield* sql`
        SELECT r.id, r.provider_id, p.name AS provider_name, p.url AS provider_url, p.contact AS provider_contact,
               r.type, r.name, r.description, r.url, r.method, r.status, r.verification_level, r.listed, r.source
        FROM resources r JOIN providers p ON p.id = r.provider_id
        WHERE ${where}
        ORDER BY r.id ${page ? sql`LIMIT ${page.limit} OFFSET ${page.offset}` : sql``}`.pipe(Effect.flatMap(decodeResources))
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
      return rows.map(
        (r): ResourceRecord => ({
          resource: {
            id: r.id,
            type: r.type,
            name: r.name,
            description: r.description,
            url: r.url,
            method: r.method,
            capabilities: (capsBy.get(r.id) ?? []).map((c) => c.capability),
            status: r.status,
            verificationLevel: r.verification_level
          },
          provider: {
            id: r.provider_id,
            name: r.provider_name,
            ...(r.provider_url !== null ? { url: r.provider_url } : {}),
            ...(r.provider_contact !== null ? { contact: r.provider_contact } : {})
          },
          paymentOptions: (optionsBy.get(r.id) ?? []).map(toOption),
          listing: { listed: r.listed, source: r.source }
        })
      )
    })

  /** Sets the listing and its hold (null while listed); stores a change when `listed` moved. */
  const writeListing = (id: string, wasListed: boolean, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      const hold = listed ? null : (change.hold ?? "operator")
      yield* sql`UPDATE resources SET listed = ${listed ? 1 : 0}, listing_hold = ${hold}, updated_at = ${now()} WHERE id = ${id}`
      if (wasListed !== listed) yield* recordListing(id, listed, change)
    })

  /** A stored change of listing, with who made it and why. */
  const recordListing = (resourceId: string, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      const at = new Date()
      yield* sql`INSERT INTO listing_changes (id, resource_id, listed, actor, reason, at, at_ms)
        VALUES (${sortableId("ls", at.getTime())}, ${resourceId}, ${listed ? 1 : 0}, ${change.actor}, ${change.reason},
          ${at.toISOString()}, ${at.getTime()})`
    })

  /**
   * Inserts or updates an entry from `source`. A new row, or one that comes from another source
   * now (a validated URL the catalog file names), takes `listed`; a row from the same source keeps
   * its listing, so an operator's unlisting survives a restart.
   */
  const upsertOne = (entry: CatalogEntry, source: string, listed: boolean, change: ListingChange) =>
    Effect.gen(function* () {
      const { resource, provider } = entry
      const at = now()
      yield* sql`INSERT INTO providers (id, name, url, contact)
        VALUES (${provider.id}, ${provider.name}, ${provider.url ?? null}, ${provider.contact ?? null})
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, contact = excluded.contact`
      const before = yield* sql<{ listed: unknown }>`SELECT listed FROM resources WHERE id = ${resource.id}`
      // Status and level are earned from evidence: an existing row keeps its own.
      const hold = listed ? null : initialHold(source)
      yield* sql`INSERT INTO resources (id, provider_id, type, name, description, url, method, status,
          verification_level, source, listed, listing_hold, created_at, updated_at)
        VALUES (${resource.id}, ${provider.id}, ${resource.type}, ${resource.name}, ${resource.description},
          ${resource.url}, ${resource.method}, 'DISCOVERED', 0, ${source}, ${listed ? 1 : 0}, ${hold}, ${at}, ${at})
        ON CONFLICT (id) DO UPDATE SET provider_id = excluded.provider_id, type = excluded.type,
          name = excluded.name, description = excluded.description, url = excluded.url,
          method = excluded.method, updated_at = excluded.updated_at,
          listed = CASE WHEN resources.source = excluded.source THEN resources.listed ELSE excluded.listed END,
          listing_hold = CASE WHEN resources.source = excluded.source THEN resources.listing_hold ELSE excluded.listing_hold END,
          source = excluded.source`
      const after = yield* sql<{ listed: unknown }>`SELECT listed FROM resources WHERE id = ${resource.id}`
      const isListed = Number(after[0]?.listed) === 1
      if (before[0] === undefined || Number(before[0].listed) === 1 !== isListed) yield* recordListing(resource.id, isListed, change)
      yield* sql`DELETE FROM resource_capabilities WHERE resource_id = ${resource.id}`
      for (const capability of new Set(resource.capabilities)) {
        yield* sql`INSERT INTO resource_capabilities (resource_id, capability) VALUES (${resource.id}, ${capability})`
      }
      yield* sql`DELETE FROM payment_options WHERE resource_id = ${resource.id}`
      for (const [index, o] of entry.paymentOptions.entries()) {
        yield* sql`INSERT INTO payment_options (resource_id, option_index, network, scheme, asset, amount,
            amount_usd, max_amount, max_amount_usd, pay_to)
          VALUES (${resource.id}, ${index}, ${o.network}, ${o.scheme}, ${o.asset}, ${o.amount}, ${o.amountUsd},
            ${o.maxAmount ?? null}, ${o.maxAmountUsd ?? null}, ${o.payTo})`
      }
    })

  const listedOnly = sql.literal("r.listed = 1")

  return repository("ResourcesRepo", {
    /** Idempotent: loading the same catalog twice leaves the same rows. The config file lists what it names. */
    upsertCatalog: (entries: ReadonlyArray<CatalogEntry>) =>
      sql.withTransaction(
        Effect.forEach(entries, (e) => upsertOne(e, "config", true, { actor: "config", reason: "named in the catalog file" }), {
          discard: true
        })
      ),
    /** A resource a source lists itself (registration, after a healthy probe). */
    upsertListed: (entry: CatalogEntry, source: string, change: ListingChange) =>
      sql.withTransaction(upsertOne(entry, source, true, change)),
    /** A resource found by `/v1/validate` at a URL the catalog does not list: kept, but unlisted. */
    insertUnlisted: (entry: CatalogEntry, source: string, change: ListingChange) =>
      sql.withTransaction(upsertOne(entry, source, false, change)),
    /**
     * What the probe schedule visits: listed resources, unlisted ones a healthy probe may list
     * (imported, ingested, delisted as unhealthy), and everything the config file names. A URL
     * someone validated once, or one a source stopped listing, is probed only on demand.
     */
    probeTargets: () => load(probeTargetRule),
    /** What buyers see: the listed resources. */
    list: () => load(listedOnly),
    get: (id: string) => load(sql`r.id = ${id}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    /** The records of `ids` that exist, by id. */
    getMany: (ids: ReadonlyArray<string>) => (ids.length === 0 ? Effect.succeed([]) : load(sql.in("r.id", ids))),
    /** The ids of what the probe schedule visits (see probeTargets), without loading the records. */
    probeTargetIds: () =>
      sql<{ id: string }>`SELECT r.id FROM resources r WHERE ${probeTargetRule} ORDER BY r.id`.pipe(
        Effect.map((rows) => rows.map((r) => r.id))
      ),
    findByUrl: (url: string) => load(sql`r.url = ${url}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    byCapability: (capability: string) =>
      load(sql`${listedOnly} AND r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${capability})`),
    /**
     * The resources that are evidence about a payee: the listed ones paying it, and any an operator
     * quarantined, listed or not, so unlisting a quarantined entry never lifts its refusal.
     */
    byPayTo: (payTo: string) =>
      load(sql`(r.listed = 1 OR r.quarantined_by IS NOT NULL) AND r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`),
    /**
     * A few of `byPayTo`'s resources, as ids: the `limit` most promising (quarantined first, then by
     * level and reliability) and one of each provider. Enough to show a payee may be paid without
     * loading every resource that pays it (see Settlement.checkPayee); indexed by payee.
     */
    payeeShortlist: (payTo: string, limit: number) =>
      Effect.gen(function* () {
        const evidence = sql`(r.listed = 1 OR r.quarantined_by IS NOT NULL)
          AND r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`
        const best = yield* sql<{ id: string }>`
          SELECT r.id FROM resources r LEFT JOIN resource_metrics m ON m.resource_id = r.id WHERE ${evidence}
          ORDER BY CASE WHEN r.status = 'QUARANTINED' THEN 0 ELSE 1 END, r.verification_level DESC,
            COALESCE(m.reliability, 0) DESC, r.id LIMIT ${limit}`
        const perProvider = yield* sql<{ id: string }>`SELECT MIN(r.id) AS id FROM resources r WHERE ${evidence} GROUP BY r.provider_id`
        return [...new Set([...best, ...perProvider].map((row) => row.id))]
      }),
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
      }).pipe(sql.withTransaction),
    /**
     * After a probe: reads the listing, lets `decide` (the probe rule, docs/decisions.md) say what
     * changes, and stores it. The caller runs it in a transaction (the recorder's batch, after the
     * probe's observation) so an operator's concurrent change is not lost.
     */
    afterProbe: (id: string, actor: string, decide: (state: ListingState) => ListingStep) =>
      Effect.gen(function* () {
        const [row] = yield* sql`SELECT listed, listing_hold, unhealthy_since_ms FROM resources WHERE id = ${id}`.pipe(
          Effect.flatMap(decodeState)
        )
        if (row === undefined) return null
        const step = decide({ listed: row.listed, hold: row.listing_hold, unhealthySinceMs: row.unhealthy_since_ms })
        if (step.unhealthySinceMs !== row.unhealthy_since_ms) {
          yield* sql`UPDATE resources SET unhealthy_since_ms = ${step.unhealthySinceMs} WHERE id = ${id}`
        }
        if (step.change !== null) {
          yield* writeListing(id, row.listed, step.change.listed, {
            actor,
            reason: step.change.reason,
            ...(step.change.hold !== null ? { hold: step.change.hold } : {})
          })
        }
        return step
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
      sql.withTransaction(
        Effect.forEach(
          entries,
          (entry) =>
            Effect.zipRight(
              upsertOne(entry, source, false, change),
              sql`UPDATE resources SET listing_hold = 'awaiting_probe'
                WHERE id = ${entry.resource.id} AND listed = 0 AND listing_hold = 'source'`
            ),
          { discard: true }
        )
      ),
    setStatus: (id: string, status: ServiceStatus, level: number) =>
      sql`UPDATE resources SET status = ${status}, verification_level = ${level}, updated_at = ${now()} WHERE id = ${id}`.pipe(
        Effect.asVoid
      )
  })
})

export class ResourcesRepo extends Context.Tag("sextant/ResourcesRepo")<
  ResourcesRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(ResourcesRepo, make)
}
