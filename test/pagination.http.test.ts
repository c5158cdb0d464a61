/**
 * Cursor pagination over HTTP: `GET /v1/resources`, `POST /v1/search` and observations. Pages
 * cover every resource exactly once while resources are added between pages, a cursor outlives
 * the process that issued it, and a bad cursor or limit is 400 {error, message}.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import type { ObservationPage } from "../src/domain/observations.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { timedOut } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { it, runWith } from "./support/effectTest.js"
import { refusal, request, startServer, testConfig } from "./support/server.js"

/** Ids with gaps (every third number), so resources added later land between existing ones. */
const idOf = (n: number) => `res-${String(n).padStart(4, "0")}`
const INITIAL = Array.from({ length: 120 }, (_, i) => idOf(i * 3))
const at = (id: string) => entry(id, `http://127.0.0.1:9/${id}`)

const folder = mkdtempSync(join(tmpdir(), "sextant-pages-"))
const database = join(folder, "sextant.db")
const config = testConfig({ database, catalog: INITIAL.map(at) })
let server: Awaited<ReturnType<typeof startServer>>
/** A second process's view of the same file, as `sextant mcp` or an import would write it: its own connection, opened for the write. */
const writer = StoreLive(database)

const addListed = (ids: ReadonlyArray<string>) =>
  runWith(
    writer,
    Effect.flatMap(CatalogWritesRepo, (repo) =>
      Effect.forEach(ids, (id) =>
        repo.upsertListed(at(id), "registration", { actor: "test", reason: "added between pages" })
      )
    )
  )

/** Well-formed pages and searches go through the typed client; bad limits and cursors go raw. */
type Client = typeof server.client
const page = (urlParams: Parameters<Client["resources"]["list"]>[0]["urlParams"]) =>
  it.run(server.client.resources.list({ urlParams }))
const search = (payload: Parameters<Client["resources"]["search"]>[0]["payload"]) =>
  it.run(server.client.resources.search({ payload }))

beforeAll(async () => {
  server = await startServer(config)
})
afterAll(async () => {
  await server.close()
  rmSync(folder, { recursive: true, force: true })
})

describe("GET /v1/resources", () => {
  test("pages in id order cover every resource exactly once while others are added between pages", async () => {
    const seen: Array<string> = []
    const added: Array<string> = []
    let cursor: string | null = null
    for (let n = 0; n < 100; n++) {
      const body = await page({ limit: 7, ...(cursor ? { cursor } : {}) })
      expect(body.resources.length).toBeLessThanOrEqual(7)
      seen.push(...body.resources.map((r) => r.resource.id))
      if (body.nextCursor === null) break
      cursor = body.nextCursor
      // Two new ids per page: one just behind the page's end, one far ahead of it.
      const last = Number(seen[seen.length - 1]!.slice(4))
      const fresh = [idOf(last - 1), idOf(last + 31)].filter((id) => !INITIAL.includes(id) && !added.includes(id))
      await addListed(fresh)
      added.push(...fresh)
    }
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen)
    for (const id of INITIAL) expect(seen).toContain(id)
    for (const id of seen) expect(INITIAL.includes(id) || added.includes(id)).toBe(true)
    // What was added ahead of the reader was read; what was added behind it was not, and that is the only loss.
    expect(seen.filter((id) => added.includes(id)).length).toBeGreaterThan(0)
  })

  test("the default page is 100 and the maximum 1000; a bad limit or cursor is 400 {error, message}", async () => {
    const first = await page({})
    expect(first.resources).toHaveLength(100)
    expect(first.nextCursor).not.toBeNull()
    // Raw: limits and cursors the contract refuses.
    for (const bad of ["limit=0", "limit=1001", "limit=ten", "cursor=not-a-cursor!", "cursor=e30"]) {
      const answer = await request(`${server.url}/v1/resources?${bad}`)
      expect(answer.status).toBe(400)
      expect(answer.body.error).toBe("INVALID_REQUEST")
      expect(typeof answer.body.message).toBe("string")
    }
    // A search cursor is not a listing cursor.
    const searched = await search({ query: "res", limit: 1 })
    const wrongKind = await refusal(server.client.resources.list({ urlParams: { cursor: searched.nextCursor! } }))
    // INVALID_REQUEST is the contract's 400.
    expect(wrongKind).toMatchObject({ error: "INVALID_REQUEST" })
  })

  test("a cursor survives a restart: the next page is the same from a new process on the same store", async () => {
    const first = await page({ limit: 5 })
    const before = await page({ limit: 5, cursor: first.nextCursor! })
    await server.close()
    server = await startServer(config)
    const after = await page({ limit: 5, cursor: first.nextCursor! })
    expect(after).toEqual(before)
  })
})

describe("POST /v1/search", () => {
  test("pages follow relevance then id and join up to the whole answer; a cursor is tied to its filters", async () => {
    const all = await search({ query: "res fixture", limit: 200 })
    expect(all.nextCursor).toBeNull()
    const joined: Array<string> = []
    let cursor: string | undefined
    for (;;) {
      const body = await search({ query: "res fixture", limit: 9, ...(cursor ? { cursor } : {}) })
      expect(body.count).toBe(body.resources.length)
      joined.push(...body.resources.map((r) => r.resource.id))
      if (body.nextCursor === null) break
      cursor = body.nextCursor
    }
    expect(joined).toEqual(all.resources.map((r) => r.resource.id))
    const other = await refusal(
      server.client.resources.search({ payload: { query: "other words", cursor: cursor ?? "x" } })
    )
    // INVALID_REQUEST is the contract's 400.
    expect(other).toMatchObject({ error: "INVALID_REQUEST" })
    // Raw: limits the contract refuses.
    for (const limit of [0, 201, 1.5]) {
      expect((await request(`${server.url}/v1/search`, { method: "POST", json: { limit } })).status).toBe(400)
    }
  })

  test("without a limit a search answers at most 50 hits", async () => {
    const body = await search({})
    expect(body.resources).toHaveLength(50)
    expect(body.nextCursor).not.toBeNull()
  })
})

describe("GET /v1/resources/{id}/observations", () => {
  test("nextCursor pages newest first like nextBefore; cursor and before together are 400", async () => {
    const id = INITIAL[0]!
    const base = Date.now() - 60_000
    await runWith(
      writer,
      Effect.flatMap(ObservationsRepo, (repo) =>
        repo.insert(
          Array.from({ length: 5 }, (_, i) =>
            timedOut(base + i * 1000, {
              outcome: "unreachable",
              resourceId: ResourceId.make(id),
              url: `http://127.0.0.1:9/${id}`
            })
          )
        )
      )
    )
    const ids: Array<string> = []
    let cursor: string | null = null
    do {
      const body: typeof ObservationPage.Type = await it.run(
        server.client.verification.observations({
          path: { id: ResourceId.make(id) },
          urlParams: { limit: 2, ...(cursor ? { cursor } : {}) }
        })
      )
      ids.push(...body.observations.map((o) => o.id))
      cursor = body.nextCursor
    } while (cursor !== null)
    expect(ids).toHaveLength(5)
    expect([...ids].sort().reverse()).toEqual(ids)
    // Raw: a cursor and `before` together, and a malformed cursor, break the contract.
    const both = await request(`${server.url}/v1/resources/${id}/observations?cursor=abc&before=${ids[0]}`)
    expect(both.status).toBe(400)
    expect((await request(`${server.url}/v1/resources/${id}/observations?cursor=%%%`)).status).toBe(400)
  })
})
