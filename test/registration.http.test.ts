import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ResourceId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { EXPECTED_OUTCOMES, startRegistrationOrigin } from "./fixtures/registrationOrigin.js"
import { entry } from "./fixtures/verificationStack.js"
import type { X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { refusal, request, startServer, testConfig, typedClient } from "./support/server.js"

const KEY = "registration-test-key"
let origin: X402Fixture
let open: Awaited<ReturnType<typeof startServer>>
let keyed: Awaited<ReturnType<typeof startServer>>
let openDb: string
let keyedDb: string

const serverOn = (database: string, apiKeys: ReturnType<typeof testConfig>["apiKeys"] = []) => {
  const base = testConfig()
  return startServer(
    testConfig({
      database,
      apiKeys,
      catalog: [entry("catalog-known", origin.url("/paid/known"))],
      probes: { ...base.probes, trustedOrigins: [origin.origin], timeoutMs: 800 },
      // These tests register more often than the default allows one client in a minute.
      limits: { ...base.limits, register: { requests: 100, windowSeconds: 60 } }
    })
  )
}

beforeAll(async () => {
  origin = await startRegistrationOrigin()
  const dir = mkdtempSync(join(tmpdir(), "sextant-registration-"))
  openDb = join(dir, "open.db")
  open = await serverOn(openDb)
  keyedDb = join(dir, "keyed.db")
  keyed = await serverOn(keyedDb, [{ principal: "ops", sha256: apiKeyHash(KEY) }])
})
afterAll(async () => {
  await open.close()
  await keyed.close()
  await origin.stop()
})

type Server = Awaited<ReturnType<typeof startServer>>
/** Well-formed registrations through the typed client; `registerRaw` for the bad requests and the missing key. */
const register = (server: Server, payload: Parameters<Server["client"]["registration"]["register"]>[0]["payload"]) =>
  it.run(server.client.registration.register({ payload }))
const registerRaw = (server: { url: string }, json: unknown) =>
  request(`${server.url}/v1/resources/register`, { method: "POST", json })
const detailOf = (server: Server, id: string) =>
  it.run(server.client.resources.get({ path: { id: ResourceId.make(id) } }))

const pathOf = (url: string) => new URL(url).pathname
const discoveredUrls = async (server: Server) =>
  (await it.run(server.client.discovery.resources({ urlParams: {} }))).items.map((i) => pathOf(i.resource)).sort()

describe("POST /v1/resources/register {origin}", () => {
  test("reads the OpenAPI document then /.well-known/x402, probes every route and lists exactly those answering a valid 402", async () => {
    const before = await discoveredUrls(open)
    expect(before).toEqual(["/paid/known"])
    const body = await register(open, { origin: origin.origin })
    expect(body.origin).toBe(origin.origin)
    expect(body.documents.map((d) => [pathOf(d.url), d.routes])).toEqual([
      ["/openapi.json", 6],
      ["/.well-known/x402", 6]
    ])
    const outcomes = Object.fromEntries(body.routes.map((r) => [new URL(r.url).pathname, r.outcome]))
    const { "http://elsewhere.invalid/paid": elsewhere, ...onOrigin }: Record<string, string> = Object.fromEntries(
      body.routes.map((r) => [r.url.startsWith(origin.origin) ? pathOf(r.url) : r.url, r.outcome])
    )
    expect(elsewhere).toBe("skipped")
    expect(onOrigin).toEqual(EXPECTED_OUTCOMES)
    expect(outcomes["/paid/post"]).toBe("listed")
    expect(body.routes.find((r) => pathOf(r.url) === "/paid/post")?.method).toBe("POST")
    expect(body.listed).toBe(3)
    expect(origin.hits.get("elsewhere.invalid")).toBeUndefined()

    expect(await discoveredUrls(open)).toEqual(["/paid/known", "/paid/openapi", "/paid/post", "/paid/well-known"])
    const listed = body.routes.find((r) => pathOf(r.url) === "/paid/openapi")
    const detail = await detailOf(open, listed?.resourceId ?? "")
    expect(detail.listing).toEqual({ listed: true, source: "registration", trusted: false })
    expect(detail.resource.status).toBe("PAYMENT_VERIFIED")
    expect(detail.resource.description).toBe("fixture resource")
    // Routes that did not answer a valid 402 leave nothing behind.
    const rejected = body.routes.filter((r) => !["listed", "already-cataloged"].includes(r.outcome))
    expect(rejected.every((r) => r.resourceId === null)).toBe(true)
  })

  test("the listing change names the caller (anonymous in open mode) and the reason", () => {
    const db = new Database(openDb, { readonly: true })
    const changes = db
      .query(
        "SELECT r.url, c.actor, c.reason FROM listing_changes c JOIN resources r ON r.id = c.resource_id WHERE r.source = 'registration'"
      )
      .all() as Array<{ url: string; actor: string; reason: string }>
    db.close()
    expect(changes.map((c) => pathOf(c.url)).sort()).toEqual(["/paid/openapi", "/paid/post", "/paid/well-known"])
    for (const change of changes) {
      expect(change.actor).toBe("anonymous")
      expect(change.reason).toContain("answered a valid 402 on stellar:testnet")
    }
  })

  test("registering again changes nothing: the known routes are already cataloged, config entries keep their source", async () => {
    const countChanges = () => {
      const db = new Database(openDb, { readonly: true })
      const n = (db.query("SELECT COUNT(*) AS n FROM listing_changes").get() as { n: number }).n
      const sources = db.query("SELECT source, COUNT(*) AS n FROM resources GROUP BY source ORDER BY source").all()
      db.close()
      return { n, sources }
    }
    const before = countChanges()
    const body = await register(open, { origin: origin.origin })
    const again = Object.fromEntries(body.routes.map((r) => [r.url, r.outcome]))
    expect(again[origin.url("/paid/openapi")]).toBe("already-cataloged")
    expect(again[origin.url("/paid/known")]).toBe("already-cataloged")
    expect(body.listed).toBe(0)
    expect(countChanges()).toEqual(before)
    const known = await detailOf(open, "catalog-known")
    expect(known.listing).toEqual({ listed: true, source: "config", trusted: true })
  })
})

describe("POST /v1/resources/register {url}", () => {
  test("a URL only ever validated is taken up by registration: listed, source registration", async () => {
    const validated = await it.run(
      open.client.verification.validate({ payload: { url: origin.url("/paid/validated") } })
    )
    expect(validated.healthy).toBe(true)
    const before = await detailOf(open, validated.resourceId)
    expect(before.listing).toEqual({ listed: false, source: "validate", trusted: false })
    const body = await register(open, { url: origin.url("/paid/validated") })
    expect(body.routes[0]).toMatchObject({ outcome: "listed", resourceId: validated.resourceId })
    const after = await detailOf(open, validated.resourceId)
    expect(after.listing).toEqual({ listed: true, source: "registration", trusted: false })
  })

  test("one route: listed when it answers a valid 402, reported and not stored when it does not", async () => {
    const ok = await register(open, { url: origin.url("/paid/single") })
    expect(ok.routes).toEqual([
      expect.objectContaining({ url: origin.url("/paid/single"), foundIn: "request", outcome: "listed", method: "GET" })
    ])
    const wrong = await register(open, { url: origin.url("/pubnet/single") })
    expect(wrong.routes[0]).toMatchObject({ outcome: "wrong-network", resourceId: null })
    expect(wrong.routes[0]?.detail).toContain("stellar:pubnet")
    const found = await it.run(open.client.resources.search({ payload: { query: "single" } }))
    expect(found.resources.map((r) => r.resource.url)).toEqual([origin.url("/paid/single")])
  })

  test("bad requests are 4xx with {error, message}", async () => {
    const cases: ReadonlyArray<readonly [unknown, number, string]> = [
      [{}, 400, "INVALID_REQUEST"],
      [{ origin: origin.origin, url: origin.url("/paid/x") }, 400, "INVALID_REQUEST"],
      [{ origin: origin.origin, method: "POST" }, 400, "INVALID_REQUEST"],
      [{ origin: "not a url" }, 400, "TARGET_REFUSED"],
      [{ origin: "ftp://127.0.0.1" }, 400, "TARGET_REFUSED"],
      [{ origin: "http://10.1.2.3" }, 400, "TARGET_REFUSED"],
      [{ url: "http://169.254.169.254/latest/meta-data" }, 400, "TARGET_REFUSED"],
      [{ origin: origin.origin, extra: 1 }, 400, "INVALID_REQUEST"]
    ]
    for (const [json, status, error] of cases) {
      const answer = await registerRaw(open, json)
      expect([answer.status, answer.body.error]).toEqual([status, error])
      expect(typeof answer.body.message).toBe("string")
    }
  })
})

describe("registration and API keys", () => {
  test("with keys configured, registration takes a key (401 without) and the change names its principal", async () => {
    const payload = { url: origin.url("/paid/keyed") }
    expect(await refusal(keyed.client.registration.register({ payload }))).toMatchObject({ error: "UNAUTHORIZED" })
    const ops = await typedClient(keyed.url, { authorization: `Bearer ${KEY}` })
    const body = await it.run(ops.registration.register({ payload }))
    expect(body.routes[0]?.outcome).toBe("listed")
    const db = new Database(keyedDb, { readonly: true })
    const change = db
      .query("SELECT actor FROM listing_changes WHERE resource_id = ?")
      .get(body.routes[0]?.resourceId ?? "") as { actor: string }
    db.close()
    expect(change.actor).toBe("ops")
  })
})
