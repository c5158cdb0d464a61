import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Config } from "../src/config.js"
import { PrincipalId, ResourceId } from "../src/domain/ids.js"
import { clientAddress, limitedGroupOf, limitKey } from "../src/limits/groups.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreLive, StoreTest } from "../src/store/Store.js"
import { observation } from "./fixtures/observations.js"
import { entry } from "./fixtures/verificationStack.js"
import { it, runWith } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

describe("rate limit groups and keys (pure)", () => {
  test("only the endpoints that cost real work are limited", () => {
    expect(limitedGroupOf("POST", "/v1/validate")).toBe("validate")
    expect(limitedGroupOf("post", "/v1/validate/")).toBe("validate")
    expect(limitedGroupOf("POST", "/v1/resources/register")).toBe("register")
    expect(limitedGroupOf("POST", "/v1/receipts")).toBe("receipts")
    expect(limitedGroupOf("POST", "/v1/preflight/outcomes")).toBe("receipts")
    expect(limitedGroupOf("POST", "/v1/preflight")).toBeUndefined()
    expect(limitedGroupOf("POST", "/x402/verify")).toBe("verify")
    expect(limitedGroupOf("POST", "/x402/settle")).toBe("settle")
    expect(limitedGroupOf("POST", "/v1/search")).toBe("search")
    expect(limitedGroupOf("GET", "/x402/discovery/search?query=x")).toBe("search")
    expect(limitedGroupOf("GET", "/x402/discovery/resources")).toBeUndefined()
    expect(limitedGroupOf("GET", "/v1/resources")).toBeUndefined()
    expect(limitedGroupOf("GET", "/v1/receipts/abc")).toBeUndefined()
  })

  // Spellings the router dispatches to the same handler: case, doubled slashes, percent-encoding,
  // a trailing slash, a query string.
  const spellings = (path: string) => [
    path.toUpperCase(),
    `/${path}`,
    path.replace(/\//g, "//"),
    path.replace(/([a-z])([a-z]*)$/, (_, first: string, rest: string) => `%${first.charCodeAt(0).toString(16)}${rest}`),
    `${path}/`,
    `${path}?x=1`
  ]
  const routes = [
    ["/v1/validate", "validate"],
    ["/v1/resources/register", "register"],
    ["/v1/receipts", "receipts"],
    ["/x402/verify", "verify"],
    ["/x402/settle", "settle"],
    ["/v1/search", "search"]
  ] as const
  for (const [path, group] of routes) {
    for (const spelling of spellings(path)) {
      test(`${spelling} is limited as ${path}`, () => {
        expect(limitedGroupOf("POST", spelling)).toBe(group)
      })
    }
  }

  test("a key's principal, else the client address; a proxy's header only when configured", () => {
    expect(limitKey("settle", PrincipalId.make("agent-1"), "127.0.0.1")).toBe("settle:key:agent-1")
    expect(limitKey("settle", null, "127.0.0.1")).toBe("settle:addr:127.0.0.1")
    const headers = { "x-forwarded-for": "203.0.113.7, 10.0.0.1" }
    const proxied = { clientAddressHeader: "x-forwarded-for", trustedProxyHops: 1 }
    expect(clientAddress({ clientAddressHeader: null, trustedProxyHops: 1 }, headers, "10.0.0.1")).toBe("10.0.0.1")
    expect(clientAddress(proxied, {}, "10.0.0.1")).toBe("10.0.0.1")
  })

  test("the forwarded address is the one the operator's proxies appended, counted from the right", () => {
    const proxied = (trustedProxyHops: number) => ({ clientAddressHeader: "x-forwarded-for", trustedProxyHops })
    // The client wrote 198.51.100.9; the one proxy appended the address it saw.
    expect(clientAddress(proxied(1), { "x-forwarded-for": "198.51.100.9, 192.0.2.50" }, "10.0.0.1")).toBe("192.0.2.50")
    expect(clientAddress(proxied(1), { "x-forwarded-for": "192.0.2.50" }, "10.0.0.1")).toBe("192.0.2.50")
    // Two proxies: a CDN appended the client, the load balancer the CDN's edge.
    expect(clientAddress(proxied(2), { "x-forwarded-for": "198.51.100.9, 192.0.2.50, 203.0.113.4" }, "10.0.0.1")).toBe(
      "192.0.2.50"
    )
    expect(clientAddress(proxied(2), { "x-forwarded-for": "192.0.2.50" }, "10.0.0.1")).toBe("192.0.2.50")
  })
})

/** Answers any path 200: a target for validates that stays on loopback. */
const target = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ ok: true }) })
afterAll(() => target.stop(true))

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex")
const servers: Array<Awaited<ReturnType<typeof startServer>>> = []
const start = async (overrides: Partial<Config>) => {
  const base = testConfig()
  const server = await startServer(
    testConfig({ probes: { ...base.probes, allowPrivateTargets: true, timeoutMs: 2_000 }, ...overrides })
  )
  servers.push(server)
  return server
}
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
})

/** Raw: what is checked is the status and the Retry-After header, which the typed client hides. */
const validate = (url: string, path: string, headers: Record<string, string> = {}) =>
  request(`${url}/v1/validate`, { method: "POST", headers, json: { url: `http://127.0.0.1:${target.port}/${path}` } })

describe("POST /v1/validate under abuse", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  const folder = mkdtempSync(join(tmpdir(), "sextant-limits-"))
  const database = join(folder, "sextant.db")
  // A second view of the server's store (its own connection, opened per read), to ask it what the probe schedule would take.
  const store = StoreLive(database)
  beforeAll(async () => {
    const base = testConfig()
    server = await start({ database, limits: { ...base.limits, validate: { requests: 20, windowSeconds: 60 } } })
  })
  afterAll(() => {
    rmSync(folder, { recursive: true, force: true })
  })

  test("300 validates of new URLs from one client: 429 after the configured 20, and no growth of scheduled probes", async () => {
    const targets = () =>
      runWith(
        store,
        Effect.flatMap(ResourceReadsRepo, (repo) => repo.probeTargets())
      )
    const scheduledBefore = (await targets()).length
    const answers: Array<Awaited<ReturnType<typeof validate>>> = []
    for (let batch = 0; batch < 30; batch++) {
      answers.push(
        ...(await Promise.all(Array.from({ length: 10 }, (_, i) => validate(server.url, `new-${batch}-${i}`))))
      )
    }
    expect(answers.filter((a) => a.status === 200)).toHaveLength(20)
    const limited = answers.filter((a) => a.status === 429)
    expect(limited).toHaveLength(280)
    for (const answer of limited) {
      expect(Object.keys(answer.body).sort()).toEqual(["error", "message", "retryAfterSeconds"])
      expect(answer.body.error).toBe("RATE_LIMITED")
      const retryAfter = Number(answer.headers.get("retry-after"))
      expect(retryAfter).toBe(answer.body.retryAfterSeconds)
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
    }
    // The 20 admitted URLs are stored, unlisted, and none of them joins the probe schedule.
    const stored = await runWith(
      store,
      Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<{ n: number }>`SELECT COUNT(*) AS n FROM resources WHERE source = 'validate' AND listed = 0`
      )
    )
    expect(Number(stored[0]?.n)).toBe(20)
    expect((await targets()).length).toBe(scheduledBefore)
  }, 30_000)
})

describe("limits per principal", () => {
  test("each API key has its own allowance; an unknown key counts against the address; a window ends by itself", async () => {
    const base = testConfig()
    const server = await start({
      apiKeys: [
        { principal: "agent-a", sha256: sha256("key-a") },
        { principal: "agent-b", sha256: sha256("key-b") }
      ],
      limits: { ...base.limits, validate: { requests: 2, windowSeconds: 1 } }
    })
    const as = (key: string) => ({ authorization: `Bearer ${key}` })
    const statuses = async (key: string, n: number) => {
      const out: Array<number> = []
      for (let i = 0; i < n; i++) out.push((await validate(server.url, `${key}-${i}-${Date.now()}`, as(key))).status)
      return out
    }
    expect(await statuses("key-a", 3)).toEqual([200, 200, 429])
    expect(await statuses("key-b", 2)).toEqual([200, 200])
    // Wrong keys are refused (401) until the address's own allowance runs out.
    expect(await statuses("guessed", 3)).toEqual([401, 401, 429])
    await Bun.sleep(1_100)
    expect(await statuses("key-a", 1)).toEqual([200])
  }, 15_000)

  test("another spelling of a limited path is counted against the same allowance", async () => {
    const base = testConfig()
    const server = await start({ limits: { ...base.limits, validate: { requests: 2, windowSeconds: 60 } } })
    // Raw: the other spellings are not paths of the contract, and the status is what is checked.
    const post = (path: string, i: number) =>
      request(`${server.url}${path}`, {
        method: "POST",
        json: { url: `http://127.0.0.1:${target.port}/spelling-${i}` }
      }).then((a) => a.status)
    expect([await post("/v1/validate", 1), await post("/v1/validate", 2), await post("/v1/validate", 3)]).toEqual([
      200, 200, 429
    ])
    const spelled = ["/V1/VALIDATE", "//v1/validate", "/v1/%76alidate", "/v1//validate/"]
    expect(await Promise.all(spelled.map((path, i) => post(path, 10 + i)))).toEqual([429, 429, 429, 429])
  }, 15_000)

  test("rotating the client's own x-forwarded-for entry does not reset its allowance", async () => {
    const base = testConfig()
    const server = await start({
      limits: { ...base.limits, validate: { requests: 2, windowSeconds: 60 }, clientAddressHeader: "x-forwarded-for" }
    })
    const statuses: Array<number> = []
    for (let n = 1; n <= 5; n++) {
      const headers = { "x-forwarded-for": `198.51.100.${n}, 192.0.2.50` }
      statuses.push((await validate(server.url, `rotated-${n}`, headers)).status)
    }
    expect(statuses).toEqual([200, 200, 429, 429, 429])
    // Another client behind the same proxy has an allowance of its own.
    expect((await validate(server.url, "other-client", { "x-forwarded-for": "192.0.2.51" })).status).toBe(200)
  }, 15_000)

  test("a limit set to null is not counted", async () => {
    const base = testConfig()
    const server = await start({ limits: { ...base.limits, validate: null } })
    const statuses = await Promise.all(
      Array.from({ length: 80 }, (_, i) => validate(server.url, `free-${i}`).then((a) => a.status))
    )
    expect(statuses.every((s) => s === 200)).toBe(true)
  }, 15_000)
})

describe("unlisted retention (verification.unlistedRetentionHours)", () => {
  it.live(
    "an unlisted validate resource nobody validated since the cutoff is deleted; recently validated, listed and config ones stay",
    () =>
      Effect.gen(function* () {
        const nowMs = Date.now()
        const validated = { actor: "validate", reason: "test" }
        const catalogWrites = yield* CatalogWritesRepo
        const listings = yield* ResourceListingRepo
        const reads = yield* ResourceReadsRepo
        const observations = yield* ObservationsRepo
        yield* catalogWrites.upsertCatalog([entry("config.kept", "http://127.0.0.1:9/config")])
        yield* catalogWrites.insertUnlisted(
          entry("discovered-stale", "http://127.0.0.1:9/stale"),
          "validate",
          validated
        )
        yield* catalogWrites.insertUnlisted(
          entry("discovered-fresh", "http://127.0.0.1:9/fresh"),
          "validate",
          validated
        )
        yield* catalogWrites.upsertListed(
          entry("registered.kept", "http://127.0.0.1:9/registered"),
          "registration",
          validated
        )
        // Validated again after the cutoff: kept.
        yield* observations.insert([
          observation(nowMs + 600_000, {
            resourceId: ResourceId.make("discovered-fresh"),
            url: "http://127.0.0.1:9/fresh"
          }),
          observation(nowMs - 600_000, {
            resourceId: ResourceId.make("discovered-stale"),
            url: "http://127.0.0.1:9/stale"
          })
        ])
        const pruned = yield* listings.pruneUnlisted(nowMs + 300_000)
        expect(pruned).toBe(1)
        const ids = yield* Effect.forEach(
          ["config.kept", "discovered-stale", "discovered-fresh", "registered.kept"],
          (id) => Effect.map(reads.get(ResourceId.make(id)), (found) => (found._tag === "Some" ? id : null))
        )
        expect(ids.filter((id) => id !== null)).toEqual(["config.kept", "discovered-fresh", "registered.kept"])
      }).pipe(Effect.provide(StoreTest))
  )
})
