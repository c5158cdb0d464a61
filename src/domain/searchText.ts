import { Schema } from "effect"

/**
 * The words text search sees, shared by the ranking rule (`discovery/search.ts`) and the search
 * index the store keeps (`store/searchIndex.ts`), so the index and the rule cannot tokenise apart.
 */

/** Lower-case runs of ASCII letters and digits; everything else separates words. */
export const tokenize = (text: string): Array<string> =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((t) => t.length > 0)

/** Weights: a hit in the name counts most, then a capability, then the description. A word prefix counts half. */
export const FIELD_WEIGHTS = { name: 3, capability: 2, description: 1 } as const
export const PREFIX_SHARE = 0.5

/**
 * Terms shorter than this match whole words only, never as a word prefix: "a" or "da" as a prefix
 * would make most of the catalog a candidate, and such a term says little about what is wanted.
 */
export const MIN_PREFIX_LENGTH = 3

/** Whether `term` also finds the words it begins (the ranking rule's prefix hit, worth `PREFIX_SHARE`). */
export const matchesAsPrefix = (term: string) => term.length >= MIN_PREFIX_LENGTH

/**
 * What one search query may hold: every distinct term adds to what a search costs, so a query is
 * refused (400, naming the bound) beyond these, rather than truncated into another question.
 */
export const MAX_QUERY_CHARACTERS = 200
export const MAX_QUERY_TERMS = 8

/** Why `query` is beyond the bounds of a search, or undefined when it is within them. */
export const queryBoundsRefusal = (query: string): string | undefined => {
  if (query.length > MAX_QUERY_CHARACTERS)
    return `a search query is at most ${MAX_QUERY_CHARACTERS} characters (got ${query.length})`
  const terms = queryTerms(query).length
  return terms > MAX_QUERY_TERMS
    ? `a search query holds at most ${MAX_QUERY_TERMS} distinct words (got ${terms})`
    : undefined
}

/** A search query's text as requests carry it: within the bounds above, else 400 naming them. */
export const SearchQueryText = Schema.String.pipe(
  Schema.filter((query) => queryBoundsRefusal(query) ?? true, {
    jsonSchema: { maxLength: MAX_QUERY_CHARACTERS },
    description: `at most ${MAX_QUERY_CHARACTERS} characters and ${MAX_QUERY_TERMS} distinct words`
  })
)

/** The query's terms, each with how often it occurs: every occurrence counts, as in the ranking rule. */
export const queryTerms = (query: string): ReadonlyArray<{ readonly term: string; readonly times: number }> => {
  const counts = new Map<string, number>()
  for (const term of tokenize(query)) counts.set(term, (counts.get(term) ?? 0) + 1)
  return [...counts].map(([term, times]) => ({ term, times }))
}

/**
 * A field's words as the index stores them: space-separated with a space at each end, so
 * " term " finds a whole word and " term" a word starting with it, by plain substring search.
 */
export const indexedWords = (texts: ReadonlyArray<string>): string => {
  const words = texts.flatMap(tokenize)
  return words.length === 0 ? " " : ` ${words.join(" ")} `
}
