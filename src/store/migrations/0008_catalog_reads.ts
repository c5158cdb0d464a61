import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { writeSearchIndex } from "../searchIndex.js"

/**
 * Reads sized for a real catalog:
 * - `resource_search`: each resource's name, capability and description words, as
 *   `store/searchIndex.ts` writes them, under a full-text index: an FTS5 table kept in step by
 *   triggers on SQLite, a GIN-indexed tsvector on Postgres. A resource's row goes with it
 *   (ON DELETE CASCADE; on SQLite the delete trigger then drops its FTS entry).
 * - `resources.catalog_hash`: the fingerprint of the entry last written from a source, so a
 *   start-up (or an import) rewrites only the entries that changed.
 * - `resources_capability_listed`: routing and capability search start from the capability.
 * Existing resources are indexed here, in pages, so an upgraded store finds what it found before.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE resources ADD COLUMN catalog_hash TEXT`
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.gen(function* () {
        yield* sql`CREATE TABLE resource_search (
          resource_id TEXT PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
          name_words TEXT NOT NULL,
          capability_words TEXT NOT NULL,
          description_words TEXT NOT NULL,
          words TSVECTOR NOT NULL
        )`
        yield* sql`CREATE INDEX resource_search_words ON resource_search USING GIN (words)`
      }),
    orElse: () =>
      Effect.gen(function* () {
        yield* sql`CREATE TABLE resource_search (
          doc INTEGER PRIMARY KEY,
          resource_id TEXT NOT NULL UNIQUE REFERENCES resources(id) ON DELETE CASCADE,
          name_words TEXT NOT NULL,
          capability_words TEXT NOT NULL,
          description_words TEXT NOT NULL
        )`
        yield* sql`CREATE VIRTUAL TABLE resource_search_fts USING fts5(
          name_words, capability_words, description_words,
          content = 'resource_search', content_rowid = 'doc', tokenize = 'unicode61 remove_diacritics 0'
        )`
        yield* sql`CREATE TRIGGER resource_search_ai AFTER INSERT ON resource_search BEGIN
          INSERT INTO resource_search_fts (rowid, name_words, capability_words, description_words)
          VALUES (new.doc, new.name_words, new.capability_words, new.description_words);
        END`
        yield* sql`CREATE TRIGGER resource_search_ad AFTER DELETE ON resource_search BEGIN
          INSERT INTO resource_search_fts (resource_search_fts, rowid, name_words, capability_words, description_words)
          VALUES ('delete', old.doc, old.name_words, old.capability_words, old.description_words);
        END`
        yield* sql`CREATE TRIGGER resource_search_au AFTER UPDATE ON resource_search BEGIN
          INSERT INTO resource_search_fts (resource_search_fts, rowid, name_words, capability_words, description_words)
          VALUES ('delete', old.doc, old.name_words, old.capability_words, old.description_words);
          INSERT INTO resource_search_fts (rowid, name_words, capability_words, description_words)
          VALUES (new.doc, new.name_words, new.capability_words, new.description_words);
        END`
      })
  })
  yield* sql`CREATE INDEX resources_capability_listed ON resource_capabilities(capability, resource_id)`

  let after = ""
  for (;;) {
    const rows = yield* sql<{ id: string; name: string; description: string }>`
      SELECT id, name, description FROM resources WHERE id > ${after} ORDER BY id LIMIT 1000`
    if (rows.length === 0) break
    const caps = yield* sql<{ resource_id: string; capability: string }>`
      SELECT resource_id, capability FROM resource_capabilities WHERE ${sql.in(
        "resource_id",
        rows.map((r) => r.id)
      )}`
    yield* writeSearchIndex(
      sql,
      rows.map((r) => ({
        resourceId: r.id,
        name: r.name,
        description: r.description,
        capabilities: caps.filter((c) => c.resource_id === r.id).map((c) => c.capability),
        // Tags came later (0030): none are stored yet when this runs.
        tags: []
      }))
    )
    after = rows[rows.length - 1]!.id
  }
})
