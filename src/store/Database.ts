import { mkdirSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { Migrator, SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted } from "effect"
import type { StoreInfo } from "../domain/store.js"
import { type CatalogChanges, CatalogChangesLive } from "./CatalogChanges.js"
import { migrations } from "./migrations/index.js"
import { type StoreTransactions, StoreTransactionsLive } from "./StoreTransactions.js"
import { sqliteClientLayer } from "./sqliteClient.js"

/** What `/health/dependencies` reports about the store: kind, location and durability. */
export class StoreInfoTag extends Context.Tag("sextant/StoreInfo")<StoreInfoTag, StoreInfo>() {}

const isPostgres = (database: string) => /^postgres(ql)?:\/\//.test(database)

/** Postgres URLs carry passwords: only host, port and database name are ever shown. */
const redactUrl = (database: string) => {
  const url = new URL(database)
  return `postgres://${url.hostname}${url.port ? `:${url.port}` : ""}${url.pathname}`
}

const runMigrations = Migrator.make({})({ loader: migrations, table: "sextant_migrations" })

/** Any fixed number: it names this service's migration lock among the database's advisory locks. */
const MIGRATION_LOCK = 5_287_411_903

/**
 * Instances started together on one Postgres database would race the Migrator's check-then-create
 * of its table, and all but one fail to start (duplicate pg_type). Each migrates while holding a
 * session advisory lock on a connection of its own, so they migrate one after another and the
 * later ones find nothing to do. The lock dies with its session if the process does.
 */
const runMigrationsExclusively = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const lockHolder = yield* sql.reserve
  yield* Effect.acquireRelease(lockHolder.execute("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK], undefined), () =>
    Effect.ignore(lockHolder.execute("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK], undefined))
  )
  return yield* runMigrations
}).pipe(Effect.scoped)

const sqliteInfo = (location: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    // Several processes (the server, `sextant mcp`) may share one file: wait for a lock instead of failing.
    yield* sql`PRAGMA busy_timeout = 5000`
    yield* sql`PRAGMA foreign_keys = ON`
    // The settlement journal must survive power loss, not only a process crash: fsync every commit.
    yield* sql`PRAGMA synchronous = FULL`
    const [journal] = yield* sql<{ journal_mode: string }>`PRAGMA journal_mode`
    const [sync] = yield* sql<{ synchronous: number }>`PRAGMA synchronous`
    const journalMode = journal?.journal_mode ?? null
    const synchronous = ["OFF", "NORMAL", "FULL", "EXTRA"][sync?.synchronous ?? -1] ?? null
    const inMemory = location === ":memory:"
    // WAL with synchronous=NORMAL can lose the last commits on power loss; FULL/EXTRA cannot.
    const durable = !inMemory && (synchronous === "FULL" || synchronous === "EXTRA")
    return { kind: "sqlite", location, journalMode, synchronous, durable } satisfies StoreInfo
  })

/** What the rest of the process sees of a migrated store: its client, and the transactions that announce catalog changes when they end. */
const withChanges = (migrated: Layer.Layer<SqlClient.SqlClient | StoreInfoTag, unknown>) =>
  StoreTransactionsLive.pipe(Layer.provideMerge(CatalogChangesLive), Layer.provideMerge(migrated))

/**
 * The store: a SqlClient on SQLite (file or `:memory:`) or Postgres, migrated at build time, and
 * the CatalogChanges its repositories announce through StoreTransactions. SQLite files get their parent folder created,
 * since bun:sqlite does not.
 */
export const DatabaseLive = (
  database: string
): Layer.Layer<SqlClient.SqlClient | StoreInfoTag | CatalogChanges | StoreTransactions, unknown> => {
  if (isPostgres(database)) {
    const client = PgClient.layer({ url: Redacted.make(database) })
    const info = Layer.succeed(StoreInfoTag, {
      kind: "postgres",
      location: redactUrl(database),
      journalMode: null,
      synchronous: null,
      durable: true
    })
    return withChanges(
      Layer.mergeAll(Layer.effectDiscard(runMigrationsExclusively), info).pipe(Layer.provideMerge(client))
    )
  }
  const location = database === ":memory:" ? database : resolve(database)
  const folder = Layer.effectDiscard(
    Effect.sync(() => location !== ":memory:" && mkdirSync(dirname(location), { recursive: true }))
  )
  const client = sqliteClientLayer(location).pipe(Layer.provide(folder))
  const info = Layer.effect(StoreInfoTag, sqliteInfo(location))
  return withChanges(Layer.effectDiscard(runMigrations).pipe(Layer.provideMerge(info), Layer.provideMerge(client)))
}
