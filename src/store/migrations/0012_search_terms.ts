import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { FIELD_TAGS } from "../searchBands.js"

/**
 * Text search by relevance band, SQLite only: the FTS5 index of migration 0008 (one
 * column per field) is replaced by `resource_terms`, one column of words tagged with their field
 * ("ndata": "data" in a name; `store/searchBands.ts`). FTS5 filters a column by reading the whole
 * posting list of the word, every field's hits included, so asking "is it in a name?" cost as
 * much as the word is common; a tagged word has its own, short, list. Contentless (the words
 * are in `resource_search`) and without positions: search needs only which rows hold a token.
 * Triggers keep it in step with `resource_search`, as before. Postgres keeps its tsvector.
 */
/** The tagged words of a `resource_search` row (`new` in a trigger, the table name in a copy). */
const tagged = (row: string) =>
  (Object.keys(FIELD_TAGS) as Array<keyof typeof FIELD_TAGS>)
    .map((field) => `replace(rtrim(${row}.${field}_words), ' ', ' ${FIELD_TAGS[field]}')`)
    .join(" || ")

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.onDialectOrElse({
    pg: () => Effect.void,
    orElse: () =>
      Effect.gen(function* () {
        yield* sql`DROP TRIGGER resource_search_ai`
        yield* sql`DROP TRIGGER resource_search_ad`
        yield* sql`DROP TRIGGER resource_search_au`
        yield* sql`DROP TABLE resource_search_fts`
        yield* sql`CREATE VIRTUAL TABLE resource_terms USING fts5(
          terms, content = '', contentless_delete = 1, detail = none, tokenize = 'unicode61 remove_diacritics 0'
        )`
        // Its tokens, so a term's prefix can be listed word by word (`searchBands.ts`, Vocabulary).
        yield* sql`CREATE VIRTUAL TABLE resource_terms_vocab USING fts5vocab(resource_terms, 'row')`
        yield* sql.unsafe(`CREATE TRIGGER resource_search_ai AFTER INSERT ON resource_search BEGIN
          INSERT INTO resource_terms (rowid, terms) VALUES (new.doc, ${tagged("new")});
        END`)
        yield* sql`CREATE TRIGGER resource_search_ad AFTER DELETE ON resource_search BEGIN
          DELETE FROM resource_terms WHERE rowid = old.doc;
        END`
        yield* sql.unsafe(`CREATE TRIGGER resource_search_au AFTER UPDATE ON resource_search BEGIN
          DELETE FROM resource_terms WHERE rowid = old.doc;
          INSERT INTO resource_terms (rowid, terms) VALUES (new.doc, ${tagged("new")});
        END`)
        yield* sql.unsafe(
          `INSERT INTO resource_terms (rowid, terms) SELECT doc, ${tagged("resource_search")} FROM resource_search`
        )
      })
  })
})
