/**
 * No search holds the thread that answers every other request. On a catalog of 20,000 listed
 * resources in a SQLite file, the worst searches the query bounds admit (eight distinct prefix
 * terms that each match much of the catalog, through `POST /v1/search` with a quality filter
 * nothing passes, and `GET /x402/discovery/search`) run while `/health/live` is asked every 10 ms:
 * every answer comes within 100 ms of the slowest answer the same process gives idle just before
 * (on a loaded machine the scheduler alone delays a thread by tens of ms; that is not the search's). bench/searchStall.ts measures the same at 100,000
 * (docs/performance.md). Queries beyond the bounds (500 characters of 166 two-letter words, 900
 * words) are refused with 400 naming the bound.
 */

import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { syntheticCatalog } from "../bench/support/syntheticCatalog.js"
import { MAX_QUERY_CHARACTERS, MAX_QUERY_TERMS } from "../src/domain/searchText.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { it, runWith } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

const RESOURCES = 20_000
const HEALTH_BOUND_MS = 100

/** 166 distinct two-letter words, padded to 500 characters. */
const TWO_LETTER_500 = Array.from(
  { length: 166 },
  (_, i) => `${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`
)
  .join(" ")
  .padEnd(500, " x")
/** 900 distinct words. */
const NINE_HUNDRED_WORDS = Array.from({ length: 900 }, (_, i) => `w${i}`).join(" ")

/** Eight distinct three-letter terms, each a prefix of words most synthetic resources hold. */
const WORST_ADMITTED = "dat ser api sta fas num age for"

let folder = ""
let server: Awaited<ReturnType<typeof startServer>>

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "sextant-search-stall-"))
  const database = join(folder, "sextant.db")
  await runWith(
    StoreLive(database),
    Effect.flatMap(CatalogWritesRepo, (repo) =>
      repo.upsertImported(syntheticCatalog(RESOURCES), "import:test", { actor: "test", reason: "seed" })
    )
  )
  // Imported entries wait for a healthy probe; list them all at once, as probes would.
  const raw = new Database(database)
  raw.run("UPDATE resources SET listed = 1, listing_hold = NULL")
  raw.close()
  server = await startServer(testConfig({ database }))
}, 120_000)

afterAll(async () => {
  await server?.close()
  rmSync(folder, { recursive: true, force: true })
})

/**
 * Asks `/health/live` 10 ms after each answer until `work` settles: the slowest answer, timed from
 * when it was due (this process runs the service too, so a held thread delays the asking as well
 * as the answer), and how many were asked.
 */
const healthDuring = async (work: Promise<unknown>) => {
  let done = false
  void work.finally(() => (done = true))
  let slowest = 0
  let asked = 0
  let due = performance.now()
  while (!done) {
    const answer = await fetch(`${server.url}/health/live`)
    await answer.arrayBuffer()
    const answered = performance.now()
    slowest = Math.max(slowest, answered - due)
    asked++
    due = answered + 10
    await Bun.sleep(10)
  }
  await work
  return { slowest, asked }
}

describe("a search never holds the request thread", () => {
  test(`the worst admitted searches leave /health/live answering within ${HEALTH_BOUND_MS} ms at ${RESOURCES} resources`, async () => {
    // One after another, as they would run anyway (search statements take turns on one thread).
    // Pages of 20: what a page costs to encode does not grow with the catalog, and this process's
    // own client decodes it on the thread being timed. The first two are what froze the process
    // before the bounds (500 characters of 166 two-letter words; 900 words): refused now.
    const idle = await healthDuring(Bun.sleep(2000))
    // Raw: the first two break the contract's bounds, and the answers are read as the plain JSON a
    // caller gets (no client-side decoding on the thread being timed).
    const searches = (async () => [
      await request(`${server.url}/x402/discovery/search?query=${encodeURIComponent(TWO_LETTER_500)}`),
      await request(`${server.url}/v1/search`, { method: "POST", json: { query: NINE_HUNDRED_WORDS } }),
      await request(`${server.url}/v1/search`, { method: "POST", json: { query: WORST_ADMITTED, limit: 20 } }),
      await request(`${server.url}/x402/discovery/search?query=${encodeURIComponent(WORST_ADMITTED)}&limit=20`),
      await request(`${server.url}/v1/search`, {
        method: "POST",
        json: { query: WORST_ADMITTED, minimumReliability: 1 }
      })
    ])()
    const { slowest, asked } = await healthDuring(searches)
    const [twoLetter, nineHundred, ranked, bazaar, unmatched] = await searches
    expect(asked).toBeGreaterThan(0)
    expect(slowest).toBeLessThan(idle.slowest + HEALTH_BOUND_MS)
    expect(twoLetter!.status).toBe(400)
    expect(nineHundred!.status).toBe(400)
    // The searches did their work: ranked hits, and a quality filter nothing passes answered empty with a way on.
    expect(ranked!.status).toBe(200)
    expect(ranked!.body.resources.length).toBe(20)
    expect(bazaar!.status).toBe(200)
    expect(bazaar!.body.resources.length).toBe(20)
    expect(unmatched!.status).toBe(200)
    expect(unmatched!.body.resources).toEqual([])
    expect(typeof unmatched!.body.nextCursor).toBe("string")
  }, 120_000)

  test("a 500-character query of 166 two-letter words is refused with 400 naming the bound, on both doors", async () => {
    const query = TWO_LETTER_500
    expect(query.length).toBe(500)
    // Raw: a query over the contract's bound.
    const bazaar = await request(`${server.url}/x402/discovery/search?query=${encodeURIComponent(query)}`)
    expect(bazaar.status).toBe(400)
    expect(bazaar.body.error).toBe("INVALID_REQUEST")
    expect(bazaar.body.message).toContain(`at most ${MAX_QUERY_CHARACTERS} characters`)
    const search = await request(`${server.url}/v1/search`, { method: "POST", json: { query } })
    expect(search.status).toBe(400)
    expect(search.body.message).toContain(`at most ${MAX_QUERY_CHARACTERS} characters`)
  })

  test("more distinct words than the bound are refused; repeating a word is not another term", async () => {
    const many = Array.from({ length: MAX_QUERY_TERMS + 1 }, (_, i) => `w${i}`).join(" ")
    // Raw: a query over the contract's bound.
    const refused = await request(`${server.url}/v1/search`, { method: "POST", json: { query: many } })
    expect(refused.status).toBe(400)
    expect(refused.body.message).toContain(`at most ${MAX_QUERY_TERMS} distinct words`)
    // Answered, not refused: a refusal would fail it.run with the error it decoded to.
    await it.run(server.client.resources.search({ payload: { query: "data ".repeat(30) } }))
  })

  test("one- and two-character terms find whole words only, not every word they begin", async () => {
    // "da" begins "data" in a third of the catalog; as a whole word it is in none.
    const short = await it.run(server.client.resources.search({ payload: { query: "da" } }))
    expect(short.resources).toEqual([])
    const prefix = await it.run(server.client.resources.search({ payload: { query: "dat", limit: 5 } }))
    expect(prefix.resources.length).toBe(5)
  })

  test("the MCP search tools are the same doors: an over-long query is a tool error naming the bound", async () => {
    const client = new Client({ name: "test", version: "1" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    const query = "ab ".repeat(100)
    for (const name of ["search_resources", "search_discovery_resources"]) {
      const answer = await client.callTool({ name, arguments: { query } })
      expect(answer.isError).toBe(true)
      expect(JSON.stringify(answer.content)).toContain(`at most ${MAX_QUERY_CHARACTERS} characters`)
    }
    const fine = await client.callTool({ name: "search_resources", arguments: { query: WORST_ADMITTED, limit: 3 } })
    expect(fine.isError).toBeFalsy()
    await client.close()
  })
})
