/** The relevance bands of a text query (pure): which scores exist, and which bands the index cannot reach. */
import { describe, expect, test } from "bun:test"
import { queryTerms } from "../src/domain/searchText.js"
import { achievableScores, bandsOf, taggedTerms } from "../src/store/searchBands.js"

describe("achievableScores", () => {
  test("one term: name 3, capability 2, name prefix 1.5, description or capability prefix 1, description prefix 0.5", () => {
    expect(achievableScores(queryTerms("ledger"))).toEqual([3, 2, 1.5, 1, 0.5])
  })
  test("a repeated term counts each time; two terms sum", () => {
    expect(achievableScores(queryTerms("ledger ledger"))).toEqual([6, 4, 3, 2, 1])
    const two = achievableScores(queryTerms("ledger data"))
    expect(two[0]).toBe(6)
    expect(two[two.length - 1]).toBe(0.5)
    expect(two).toContain(3.5)
  })
})

describe("bandsOf", () => {
  const terms = queryTerms("insp")
  test("with nothing listed, every band is a query on tagged prefixes, the top one a name word", () => {
    const bands = bandsOf(terms, new Map())
    expect(bands.map((b) => b.score)).toEqual([3, 2, 1.5, 1, 0.5])
    expect(bands[0]!.match).toBe('("ninsp")')
    expect(bands[4]!.match).toContain('"dinsp"*')
  })
  test("listed tokens replace prefixes, and a band no listed token reaches is left out", () => {
    // "insp" is a word of no field; "inspect" is in names only.
    const vocabulary = new Map(taggedTerms(terms).map((t) => [t, t === "ninsp" ? ["ninspect"] : []] as const))
    const bands = bandsOf(terms, vocabulary)
    expect(bands).toEqual([{ score: 1.5, match: '("ninspect")' }])
  })
})
