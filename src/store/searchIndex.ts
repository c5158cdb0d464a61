import type { SqlClient, Statement } from "@effect/sql"
import { Context, Effect, Schema } from "effect"
import { FIELD_WEIGHTS, indexedWords, matchesAsPrefix, PREFIX_SHARE, queryTerms } from "../domain/searchText.js"
import { decodeRows, SqlNumber } from "./repository.js"
import { anyTerm, type Band, bandsOf, taggedTerms, type Vocabulary, type WeightedTerm } from "./searchBands.js"

/**
 * The text search index: one row per resource with its name, capability and description words
 * (`indexedWords`), matched through SQLite FTS5 (the field-tagged words of `resource_terms`,
 * migration 0012) or a Postgres tsvector. The full-text index only finds the candidates (any word
 * starting with a query term, or on SQLite those of one relevance band); relevance is then computed in SQL
 * from the stored words with the ranking rule of `discovery/search.ts` (name 3, capability 2,
 * description 1, a prefix half, the best field per term, summed), so pages can be cut in SQL and
 * the order stays what it was before the index existed. bm25 and ts_rank would rank differently.
 */

export interface IndexedText {
  readonly resourceId: string
  readonly name: string
  readonly capabilities: ReadonlyArray<string>
  /** The bazaar's topical tags, ranked as capabilities are (`discovery/search.ts` says the same). */
  readonly tags: ReadonlyArray<string>
  readonly description: string
}

const rowOf = (t: IndexedText) => ({
  resource_id: t.resourceId,
  name_words: indexedWords([t.name]),
  capability_words: indexedWords([...t.capabilities, ...t.tags]),
  description_words: indexedWords([t.description])
})

/** Writes (or rewrites) the index rows of these resources, in one statement. */
export const writeSearchIndex = (sql: SqlClient.SqlClient, texts: ReadonlyArray<IndexedText>) => {
  if (texts.length === 0) return Effect.void
  const rows = texts.map(rowOf)
  return sql
    .onDialectOrElse({
      pg: () =>
        sql`INSERT INTO resource_search (resource_id, name_words, capability_words, description_words, words)
        SELECT v.resource_id, v.name_words, v.capability_words, v.description_words,
          to_tsvector('simple', v.name_words || v.capability_words || v.description_words)
        FROM (VALUES ${sql.csv(rows.map((r) => sql`(${r.resource_id}, ${r.name_words}, ${r.capability_words}, ${r.description_words})`))})
          AS v(resource_id, name_words, capability_words, description_words)
        ON CONFLICT (resource_id) DO UPDATE SET name_words = excluded.name_words,
          capability_words = excluded.capability_words, description_words = excluded.description_words, words = excluded.words`,
      // The FTS5 table follows resource_search through the triggers of migration 0012.
      orElse: () =>
        sql`INSERT INTO resource_search ${sql.insert(rows)}
        ON CONFLICT (resource_id) DO UPDATE SET name_words = excluded.name_words,
          capability_words = excluded.capability_words, description_words = excluded.description_words`
    })
    .pipe(Effect.asVoid)
}

/** A text query made ready for SQL; null when it has no term (then every resource scores 0). */
export interface TextQuery {
  /**
   * The matching resources as a FROM clause giving `r` (resources) and `rs` (resource_search),
   * with its condition in `matches`. On SQLite the full-text match drives the join (CROSS JOIN
   * fixes the order): started from `resources`, the planner probed the index once per resource and
   * per match, 0.2 s at 2,000 resources.
   */
  readonly from: Statement.Fragment
  /** Resources having a word that starts with some term: an SQL condition over `rs` (resource_search). */
  readonly matches: Statement.Fragment
  /** The relevance of a matching resource, an SQL expression over `rs`. */
  readonly relevance: Statement.Fragment
  /**
   * The terms when the page is read by relevance band (`searchBands.ts`); null on Postgres, and
   * beyond `SearchTuning.bandTerms` terms, where every candidate is ranked in one statement.
   */
  readonly banded: ReadonlyArray<WeightedTerm> | null
}

/**
 * When a page is read band by band (`rankPage`). A band with at least `denseBand` resources is
 * read in id order, scanning at most `scanBudget` resources before the rest of it is ranked from
 * the index; a query with more than `bandTerms` distinct terms is ranked in one statement; a
 * term's tokens are listed (`Vocabulary`) when there are at most `listedTokens` of them. The defaults suit a catalog of 100,000; tests lower them to reach every path
 * with a few resources.
 */
export class SearchTuning extends Context.Reference<SearchTuning>()("sextant/SearchTuning", {
  defaultValue: () => ({ denseBand: 1000, scanBudget: 4000, bandTerms: 3, listedTokens: 16 })
}) {}

/**
 * Terms are runs of [a-z0-9] (`tokenize`), so they need no escaping inside an FTS5 string or a
 * tsquery, and " term " / " term" find a whole word / a word prefix in the stored words.
 */
export const textQuery = (
  sql: SqlClient.SqlClient,
  query: string,
  tuning: typeof SearchTuning.Service
): TextQuery | null => {
  const terms = queryTerms(query)
  if (terms.length === 0) return null
  const pg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const contains = (column: string, needle: string) =>
    pg ? sql`strpos(${sql.literal(column)}, ${needle}) > 0` : sql`instr(${sql.literal(column)}, ${needle}) > 0`
  // Weights are this file's own constants, written as literals: Postgres cannot type a bare parameter in a CASE.
  const number = (n: number) => sql.literal(String(n))
  const fieldScore = (column: string, weight: number, term: string) =>
    matchesAsPrefix(term)
      ? sql`CASE WHEN ${contains(column, ` ${term} `)} THEN ${number(weight)} WHEN ${contains(column, ` ${term}`)} THEN ${number(weight * PREFIX_SHARE)} ELSE 0 END`
      : sql`CASE WHEN ${contains(column, ` ${term} `)} THEN ${number(weight)} ELSE 0 END`
  const termScore = ({ term, times }: { term: string; times: number }) => {
    const fields = sql.csv([
      fieldScore("rs.name_words", FIELD_WEIGHTS.name, term),
      fieldScore("rs.capability_words", FIELD_WEIGHTS.capability, term),
      fieldScore("rs.description_words", FIELD_WEIGHTS.description, term)
    ])
    return pg ? sql`(${number(times)} * GREATEST(${fields}))` : sql`(${number(times)} * max(${fields}))`
  }
  const relevance = sql`(${sql.join(" + ", false)(terms.map(termScore))})`
  const from = pg
    ? sql`resource_search rs JOIN resources r ON r.id = rs.resource_id`
    : sql`resource_terms CROSS JOIN resource_search rs ON rs.doc = resource_terms.rowid CROSS JOIN resources r ON r.id = rs.resource_id`
  const matches = pg
    ? sql`rs.words @@ to_tsquery('simple', ${terms.map((t) => (matchesAsPrefix(t.term) ? `${t.term}:*` : t.term)).join(" | ")})`
    : sql`resource_terms MATCH ${anyTerm(terms)}`
  const banded = pg || terms.length > tuning.bandTerms ? null : terms
  return { from, matches, relevance, banded }
}

/** Where a search page ended: the last hit's relevance and id. */
export interface SearchPosition {
  readonly relevance: number
  readonly id: string
}

const decodeRanked = decodeRows(Schema.Struct({ id: Schema.String, relevance: SqlNumber }))
const decodeIds = decodeRows(Schema.Struct({ id: Schema.String }))

/**
 * One page of ranked ids: the resources matching `text` (every one when null) and `catalog` (an
 * SQL condition over `r`, resources), by relevance then id, after `after`, at most `limit`.
 */
export const rankPage = (
  sql: SqlClient.SqlClient,
  text: TextQuery | null,
  catalog: Statement.Fragment,
  after: SearchPosition | null,
  limit: number,
  tuning: typeof SearchTuning.Service
) =>
  text?.banded
    ? bandedPage(sql, text, text.banded, catalog, after, limit, tuning)
    : rankAll(sql, text, catalog, after, limit)

/** Every candidate scored and sorted in one statement: Postgres, a query without text, or with many terms. */
const rankAll = (
  sql: SqlClient.SqlClient,
  text: TextQuery | null,
  catalog: Statement.Fragment,
  after: SearchPosition | null,
  limit: number
) => {
  const after_ =
    after === null
      ? sql`1 = 1`
      : sql`(s.relevance < ${after.relevance} OR (s.relevance = ${after.relevance} AND s.id > ${after.id}))`
  return sql`
    SELECT s.id, s.relevance FROM (
      SELECT r.id AS id, ${text ? text.relevance : sql.literal("0")} AS relevance
      FROM ${text ? text.from : sql`resources r`}
      WHERE ${text ? sql`${text.matches} AND ${catalog}` : catalog}
    ) s
    WHERE ${after_} ${text ? sql`AND s.relevance > 0` : sql``}
    ORDER BY s.relevance DESC, s.id
    LIMIT ${limit}`.pipe(Effect.flatMap(decodeRanked))
}

/**
 * The page read band by band from the top (`searchBands.ts`), stopping once it is full: every
 * resource of a higher band ranks before any of a lower one, and within a band the order is the
 * id. Each band's documents are first read from the index (up to `denseBand`): a small band is
 * ranked from those by key, a large one is read in id order, where its members are close together and the page
 * fills after a few rows. That scan stops after `scanBudget` resources (a band thinned out by
 * the catalog filters, or gathered at the far end of the ids), and the index ranks the rest.
 * Each resource's relevance is still the SQL of `relevance`, so a band only chooses candidates.
 */
const bandedPage = (
  sql: SqlClient.SqlClient,
  text: TextQuery,
  terms: ReadonlyArray<WeightedTerm>,
  catalog: Statement.Fragment,
  after: SearchPosition | null,
  limit: number,
  tuning: typeof SearchTuning.Service
) =>
  Effect.gen(function* () {
    const bands = bandsOf(terms, yield* vocabularyOf(sql, taggedTerms(terms), tuning.listedTokens))
    const page: Array<{ id: string; relevance: number }> = []
    for (const band of bands) {
      if (page.length >= limit) break
      if (after !== null && band.score > after.relevance) continue
      const afterId = after !== null && band.score === after.relevance ? after.id : null
      const ids = yield* bandIds(sql, text, band, catalog, afterId, limit - page.length, tuning)
      page.push(...ids.map((id) => ({ id, relevance: band.score })))
    }
    return page
  })

/** The tokens of the index starting with each tagged term, where there are at most `max` (fts5vocab, migration 0012). */
const vocabularyOf = (sql: SqlClient.SqlClient, tagged: ReadonlyArray<string>, max: number) =>
  Effect.gen(function* () {
    const vocabulary = new Map<string, ReadonlyArray<string>>()
    for (const prefix of tagged) {
      // Tokens are runs of [a-z0-9], all below "{".
      const tokens = yield* sql<{ term: string }>`SELECT term FROM resource_terms_vocab
        WHERE term >= ${prefix} AND term < ${`${prefix}{`} ORDER BY term LIMIT ${max + 1}`
      if (tokens.length <= max)
        vocabulary.set(
          prefix,
          tokens.map((t) => t.term)
        )
    }
    return vocabulary as Vocabulary
  })

/** The ids of one band after `afterId`, in id order, at most `limit`. */
const bandIds = (
  sql: SqlClient.SqlClient,
  text: TextQuery,
  band: Band,
  catalog: Statement.Fragment,
  afterId: string | null,
  limit: number,
  tuning: typeof SearchTuning.Service
) =>
  Effect.gen(function* () {
    const inBand = sql`${text.relevance} = ${band.score} AND ${catalog}`
    const fromIndex = (after: string | null, n: number) =>
      sql`SELECT r.id FROM ${text.from}
        WHERE resource_terms MATCH ${band.match} AND ${inBand} ${after === null ? sql`` : sql`AND r.id > ${after}`}
        ORDER BY r.id LIMIT ${n}`.pipe(Effect.flatMap(decodeIds))
    // A small band's documents are taken once from the index and ranked by key, not matched again.
    const docs = (yield* sql<{ doc: unknown }>`SELECT rowid AS doc FROM resource_terms
        WHERE resource_terms MATCH ${band.match} LIMIT ${tuning.denseBand}`).map((d) => Number(d.doc))
    if (docs.length < tuning.denseBand) {
      if (docs.length === 0) return []
      return (yield* sql`SELECT r.id FROM resource_search rs CROSS JOIN resources r ON r.id = rs.resource_id
        WHERE ${sql.in("rs.doc", docs)} AND ${inBand} ${afterId === null ? sql`` : sql`AND r.id > ${afterId}`}
        ORDER BY r.id LIMIT ${limit}`.pipe(Effect.flatMap(decodeIds))).map((r) => r.id)
    }
    const start = afterId === null ? sql`1 = 1` : sql`rs.resource_id > ${afterId}`
    // The last id the scan may read; none when fewer than the budget remain.
    const [edge] = yield* sql`SELECT rs.resource_id AS id FROM resource_search rs WHERE ${start}
      ORDER BY rs.resource_id LIMIT 1 OFFSET ${tuning.scanBudget - 1}`.pipe(Effect.flatMap(decodeIds))
    const scanned =
      yield* sql`SELECT rs.resource_id AS id FROM resource_search rs CROSS JOIN resources r ON r.id = rs.resource_id
      WHERE ${start} ${edge ? sql`AND rs.resource_id <= ${edge.id}` : sql``} AND ${inBand}
      ORDER BY rs.resource_id LIMIT ${limit}`.pipe(Effect.flatMap(decodeIds))
    const ids = scanned.map((r) => r.id)
    if (ids.length >= limit || edge === undefined) return ids
    return [...ids, ...(yield* fromIndex(edge.id, limit - ids.length)).map((r) => r.id)]
  })
