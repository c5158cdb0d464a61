import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import type { CatalogEntry, HttpMethod, ResourcePaymentOption, ResourceRecord, ServiceStatus } from "../domain/resources.js"

interface ResourceRow {
  readonly id: string
  readonly provider_id: string
  readonly provider_name: string
  readonly provider_url: string | null
  readonly provider_contact: string | null
  readonly type: "http" | "mcp"
  readonly name: string
  readonly description: string
  readonly url: string
  readonly method: HttpMethod
  readonly status: ServiceStatus
  readonly verification_level: number
}

interface OptionRow {
  readonly resource_id: string
  readonly network: ResourcePaymentOption["network"]
  readonly scheme: ResourcePaymentOption["scheme"]
  readonly asset: string
  readonly amount: string
  readonly amount_usd: number
  readonly max_amount: string | null
  readonly max_amount_usd: number | null
  readonly pay_to: string
}

const toOption = (row: OptionRow): ResourcePaymentOption => ({
  network: row.network,
  scheme: row.scheme,
  asset: row.asset,
  amount: row.amount,
  amountUsd: Number(row.amount_usd),
  ...(row.max_amount !== null ? { maxAmount: row.max_amount } : {}),
  ...(row.max_amount_usd !== null ? { maxAmountUsd: Number(row.max_amount_usd) } : {}),
  payTo: row.pay_to
})

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

  /** Loads full records for the resource rows selected by `where` (a SQL fragment over `r`). */
  const load = (where: ReturnType<typeof sql.literal> | ReturnType<typeof sql>) =>
    Effect.gen(function* () {
      const rows = yield* sql<ResourceRow>`
        SELECT r.id, r.provider_id, p.name AS provider_name, p.url AS provider_url, p.contact AS provider_contact,
               r.type, r.name, r.description, r.url, r.method, r.status, r.verification_level
        FROM resources r JOIN providers p ON p.id = r.provider_id
        WHERE ${where}
        ORDER BY r.id`
      if (rows.length === 0) return [] as Array<ResourceRecord>
      const ids = rows.map((r) => r.id)
      const caps = yield* sql<{ resource_id: string; capability: string }>`
        SELECT resource_id, capability FROM resource_capabilities WHERE ${sql.in("resource_id", ids)} ORDER BY capability`
      const options = yield* sql<OptionRow>`
        SELECT * FROM payment_options WHERE ${sql.in("resource_id", ids)} ORDER BY resource_id, option_index`
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
            verificationLevel: Number(r.verification_level)
          },
          provider: {
            id: r.provider_id,
            name: r.provider_name,
            ...(r.provider_url !== null ? { url: r.provider_url } : {}),
            ...(r.provider_contact !== null ? { contact: r.provider_contact } : {})
          },
          paymentOptions: (optionsBy.get(r.id) ?? []).map(toOption)
        })
      )
    }).pipe(Effect.orDie)

  const upsertOne = (entry: CatalogEntry, source: string) =>
    Effect.gen(function* () {
      const { resource, provider } = entry
      const at = now()
      yield* sql`INSERT INTO providers (id, name, url, contact)
        VALUES (${provider.id}, ${provider.name}, ${provider.url ?? null}, ${provider.contact ?? null})
        ON CONFLICT (id) DO UPDATE SET name = excluded.name, url = excluded.url, contact = excluded.contact`
      // Status and level are earned from evidence: an existing row keeps its own.
      yield* sql`INSERT INTO resources (id, provider_id, type, name, description, url, method, status,
          verification_level, source, created_at, updated_at)
        VALUES (${resource.id}, ${provider.id}, ${resource.type}, ${resource.name}, ${resource.description},
          ${resource.url}, ${resource.method}, 'DISCOVERED', 0, ${source}, ${at}, ${at})
        ON CONFLICT (id) DO UPDATE SET provider_id = excluded.provider_id, type = excluded.type,
          name = excluded.name, description = excluded.description, url = excluded.url,
          method = excluded.method, source = excluded.source, updated_at = excluded.updated_at`
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

  // A store failure is not the caller's fault and has no recovery here: it becomes a defect that
  // the HTTP layer answers with 503 STORE_UNAVAILABLE, and money paths refuse to proceed.
  return {
    /** Idempotent: loading the same catalog twice leaves the same rows. */
    upsertCatalog: (entries: ReadonlyArray<CatalogEntry>) =>
      sql.withTransaction(Effect.forEach(entries, (e) => upsertOne(e, "catalog"), { discard: true })).pipe(Effect.orDie),
    /** A resource found by `/v1/validate` at a URL the catalog does not list. */
    insertDiscovered: (entry: CatalogEntry) => sql.withTransaction(upsertOne(entry, "discovered")).pipe(Effect.orDie),
    list: () => load(sql.literal("1 = 1")),
    get: (id: string) => load(sql`r.id = ${id}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    findByUrl: (url: string) => load(sql`r.url = ${url}`).pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
    byCapability: (capability: string) =>
      load(sql`r.id IN (SELECT resource_id FROM resource_capabilities WHERE capability = ${capability})`),
    byPayTo: (payTo: string) => load(sql`r.id IN (SELECT resource_id FROM payment_options WHERE pay_to = ${payTo})`),
    setStatus: (id: string, status: ServiceStatus, level: number) =>
      sql`UPDATE resources SET status = ${status}, verification_level = ${level}, updated_at = ${now()} WHERE id = ${id}`.pipe(
        Effect.asVoid,
        Effect.orDie
      )
  }
})

export class ResourcesRepo extends Context.Tag("sextant/ResourcesRepo")<
  ResourcesRepo,
  Effect.Effect.Success<typeof make>
>() {
  static readonly Live = Layer.effect(ResourcesRepo, make)
}
