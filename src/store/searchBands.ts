import { FIELD_WEIGHTS, matchesAsPrefix, PREFIX_SHARE } from "../domain/searchText.js"

/**
 * The relevance bands of a text query, as full-text expressions (pure, no I/O).
 *
 * The ranking rule (`discovery/search.ts`) gives each term the value of its best hit (a whole
 * word or a word prefix in the name, a capability or the description) and sums them, so a
 * query can only score a few distinct values. The store's term index (migration 0012) holds
 * each word once per field it occurs in, tagged with the field (`FIELD_TAGS`): "ndata" is
 * "data" in a name. Which field a term hits is then a plain token (whole word) or token
 * prefix query, costing the length of that field's posting list, so "the resources scoring
 * exactly s" is one FTS5 expression per achievable s. A page is read band by band from the
 * top, and stops once it is full: the top bands are usually small, and the band a page ends
 * in is read in id order (see `ResourceReadsRepo.searchPage`).
 */

/** The tag each field's words carry in the term index: one letter, then the word. */
export const FIELD_TAGS = { name: "n", capability: "c", description: "d" } as const

/** One way a term can hit a field: a whole word (`"ndata"`) or a word prefix (`"ndata"*`), and what it is worth. */
interface Hit {
  readonly tag: string
  readonly prefix: boolean
  readonly value: number
}

const HITS: ReadonlyArray<Hit> = (Object.keys(FIELD_TAGS) as Array<keyof typeof FIELD_TAGS>).flatMap((field) => [
  { tag: FIELD_TAGS[field], prefix: false, value: FIELD_WEIGHTS[field] },
  { tag: FIELD_TAGS[field], prefix: true, value: FIELD_WEIGHTS[field] * PREFIX_SHARE }
])

/** What one term can be worth, highest first (3, 2, 1.5, 1, 0.5). */
const LEVELS = [...new Set(HITS.map((h) => h.value))].sort((a, b) => b - a)

/**
 * The index's tokens starting with a tagged term ("ninsp": ["ninspect"]), by tagged term; a
 * tagged term missing here has too many to list and is queried as a prefix. Listed tokens are
 * queried one by one: FTS5 merges every token of a prefix query into one list before it can
 * skip through it, which made a band of "oracle forecast 4217" slow on a large catalog, and a listed token
 * that does not exist drops its branch altogether.
 */
export type Vocabulary = ReadonlyMap<string, ReadonlyArray<string>>

/** The tagged terms whose tokens a query's bands would list (`Vocabulary`). */
export const taggedTerms = (terms: ReadonlyArray<WeightedTerm>): ReadonlyArray<string> =>
  terms.flatMap(({ term }) => Object.values(FIELD_TAGS).map((tag) => `${tag}${term}`))

/**
 * The resources where `term` is worth at least `level`: any hit of that value or more. A
 * prefix query finds the whole word too, so a field's whole-word token is left out when its
 * prefix counts as much. False when the index holds none of the tokens.
 */
const atLeastLevel = (term: string, level: number, vocabulary: Vocabulary): Condition => {
  const hits = hitsOf(term).filter((h) => h.value >= level)
  const tokens = [...new Set(hits.map((h) => h.tag))].flatMap((tag) => {
    const tagged = `${tag}${term}`
    const prefix = hits.some((h) => h.tag === tag && h.prefix)
    const known = vocabulary.get(tagged)
    if (known === undefined) return [prefix ? `"${tagged}"*` : `"${tagged}"`]
    return (prefix ? known : known.filter((t) => t === tagged)).map((t) => `"${t}"`)
  })
  if (tokens.length === 0) return false
  return tokens.length === 1 ? tokens[0]! : `(${tokens.join(" OR ")})`
}

/** The hits `term` can make: a short one (`matchesAsPrefix`) only whole words. */
const hitsOf = (term: string) => (matchesAsPrefix(term) ? HITS : HITS.filter((h) => !h.prefix))

/** The resources where some term hits some field: every candidate of a text query. */
export const anyTerm = (terms: ReadonlyArray<WeightedTerm>): string =>
  terms
    .map(
      (t) =>
        `(${Object.values(FIELD_TAGS)
          .map((tag) => `"${tag}${t.term}"${matchesAsPrefix(t.term) ? "*" : ""}`)
          .join(" OR ")})`
    )
    .join(" OR ")

export interface WeightedTerm {
  readonly term: string
  readonly times: number
}

/** A boolean over the index: a full-text expression, or always / never. */
type Condition = string | boolean

const and = (left: Condition, right: Condition): Condition =>
  left === false || right === false ? false : left === true ? right : right === true ? left : `${left} AND ${right}`

/**
 * The resources whose relevance is at least `need`, counting the terms from `from` on: for each
 * value the term may take (or none), the rest must make up the difference. A branch whose rest
 * is the same as at the next lower value is left out, since that branch finds all it finds.
 */
const scoreAtLeast = (
  terms: ReadonlyArray<WeightedTerm>,
  vocabulary: Vocabulary,
  need: number,
  from = 0
): Condition => {
  if (need <= 0) return true
  const best = terms.slice(from).reduce((sum, t) => sum + t.times * LEVELS[0]!, 0)
  if (best < need) return false
  const { term, times } = terms[from]!
  const rests = [...LEVELS, 0].map((level) => ({
    level,
    rest: scoreAtLeast(terms, vocabulary, need - times * level, from + 1)
  }))
  const branches = rests.flatMap(({ level, rest }, i) => {
    if (rest === false || (i + 1 < rests.length && rests[i + 1]!.rest === rest)) return []
    const branch = level === 0 ? rest : and(atLeastLevel(term, level, vocabulary), rest)
    return branch === false ? [] : [branch]
  })
  if (branches.includes(true)) return true
  if (branches.length === 0) return false
  return branches.length === 1 ? `(${branches[0]})` : `(${branches.map((b) => `(${b})`).join(" OR ")})`
}

/** Every relevance the terms can sum to, highest first, 0 left out. */
export const achievableScores = (terms: ReadonlyArray<WeightedTerm>): ReadonlyArray<number> => {
  let sums = new Set([0])
  for (const { times } of terms)
    sums = new Set([...sums].flatMap((s) => [0, ...LEVELS].map((level) => s + times * level)))
  return [...sums].filter((s) => s > 0).sort((a, b) => b - a)
}

/** A relevance band: the resources scoring exactly `score`, as an FTS5 expression over the term index. */
export interface Band {
  readonly score: number
  readonly match: string
}

/**
 * The bands of a query, highest first: at least this score, and not at least the next higher
 * one. Every resource matching some term is in exactly one band; a band no token of the index
 * can reach is left out. The expressions grow as (levels + 1) ^ terms, so callers bound the
 * number of terms (`SearchTuning.bandTerms`).
 */
export const bandsOf = (terms: ReadonlyArray<WeightedTerm>, vocabulary: Vocabulary): ReadonlyArray<Band> => {
  const scores = achievableScores(terms)
  return scores.flatMap((score, i) => {
    const atLeast = scoreAtLeast(terms, vocabulary, score)
    const above = i === 0 ? false : scoreAtLeast(terms, vocabulary, scores[i - 1]!)
    // Scores are sums of positive values, so "at least" is never always; the same expression twice is an empty band.
    if (typeof atLeast !== "string" || above === true || above === atLeast) return []
    return [{ score, match: above === false ? atLeast : `${atLeast} NOT ${above}` }]
  })
}
