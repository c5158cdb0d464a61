/**
 * The words text search sees, shared by the ranking rule (`discovery/search.ts`) and the search
 * index the store keeps (`store/searchIndex.ts`), so the index and the rule cannot tokenise apart.
 */

/** Lower-case runs of ASCII letters and digits; everything else separates words. */
export const tokenize = (text: string): Array<string> =>
  text.toLowerCase().split(/[^a-z0-9]+/).filter((t) => t.length > 0)

/** Weights: a hit in the name counts most, then a capability, then the description. A word prefix counts half. */
export const FIELD_WEIGHTS = { name: 3, capability: 2, description: 1 } as const
export const PREFIX_SHARE = 0.5

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
