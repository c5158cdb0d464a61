/** The relevance bands of a text query (pure): which scores exist, and which bands the index cannot reach. */
import { describe, expect, test } from "bun:test"
import { queryBoundsRefusal, queryTerms } from "../src/domain/searchText.js"
import { achievableScores, anyTerm, bandsOf, taggedTerms } from "../src/store/searchBands.js"

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

describe("short terms", () => {
  test("a term of one or two characters is a whole token in every field, never a prefix; three characters are a prefix", () => {
    expect(anyTerm([{ term: "da", times: 1 }])).toBe('("nda" OR "cda" OR "dda")')
    expect(anyTerm([{ term: "dat", times: 1 }])).toBe('("ndat"* OR "cdat"* OR "ddat"*)')
    // Only the whole-word values remain (3, 2, 1): no band asks for a prefix.
    const bands = bandsOf([{ term: "x4", times: 1 }], new Map())
    expect(bands.map((b) => b.score)).toEqual([3, 2, 1])
    expect(bands[0]!.match).toBe('("nx4")')
    expect(bands.map((b) => b.match).join(" ")).not.toContain("*")
  })

  test("a query is refused beyond 200 characters or 8 distinct words; a repeated word is one term", () => {
    expect(queryBoundsRefusal("a ".repeat(100))).toBeUndefined()
    expect(queryBoundsRefusal("x".repeat(201))).toContain("at most 200 characters")
    expect(queryBoundsRefusal("a b c d e f g h i")).toContain("at most 8 distinct words (got 9)")
    expect(queryBoundsRefusal("data data data data data data data data data")).toBeUndefined()
  })
})
