import { describe, expect, test } from "bun:test"
import { SqlClient } from "@effect/sql"
import { Effect, Exit } from "effect"
import { FeeBudgetExhausted, NotFound, PolicyDenied, SettlementIndeterminate } from "../src/domain/errors.js"
import { ResourceId } from "../src/domain/ids.js"
import { apiKeyHash } from "../src/http/authLive.js"
import { sectionAccess } from "../src/status/access.js"
import { catalogSection } from "../src/status/catalogPage.js"
import { lineChart } from "../src/status/charts.js"
import { html } from "../src/status/html.js"
import { parseCatalogQuery } from "../src/status/StatusReader.js"
import { windowSeries } from "../src/status/series.js"
import { CatalogTableRepo, type TableClock } from "../src/store/CatalogTableRepo.js"
import { StoreTest } from "../src/store/Store.js"
import { routeMatcher, settleLabels } from "../src/telemetry/labels.js"
import { confidence } from "../src/verification/metrics.js"
import { advertised, observation, timedOut } from "./fixtures/observations.js"
import { it } from "./support/effectTest.js"
import { request, startServer, testConfig } from "./support/server.js"

const HOUR = 3_600_000

describe("rendering (pure)", () => {
  test("interpolated text is escaped: a provider's name cannot inject markup", () => {
    const evil = `<script>alert("x")</script>`
    expect(html`<td>${evil}</td>`.value).toBe("<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>")
    const section = catalogSection({
      query: parseCatalogQuery(new URLSearchParams()),
      total: 1,
      pageSize: 50,
      capabilities: [evil],
      windowHours: 24,
      rows: [
        {
          id: ResourceId.make("x"),
          name: evil,
          providerName: evil,
          capabilities: [evil],
          priceUsd: 0.001,
          status: "LIVE",
          level: 1,
          metrics: { ...observationMetrics }
        }
      ]
    }).value
    expect(section).not.toContain("<script>")
    expect(section).toContain("&lt;script&gt;")
  })

  test("a chart draws one dot per point of each series, a reference line, and escapes its title", () => {
    const svg = lineChart({
      title: "Latency <ms>",
      startMs: 0,
      endMs: 10 * HOUR,
      formatY: (y) => `${y}`,
      series: [
        { name: "p50", label: "p50", color: "#000", points: [1, 2, 3].map((h) => ({ t: h * HOUR, y: h * 10 })) },
        { name: "p95", label: "p95", color: "#111", points: [{ t: HOUR, y: 50 }] }
      ],
      reference: { label: "advertised", color: "#222", y: 20 }
    }).value
    expect(svg.match(/data-series="p50"/g)?.length).toBe(3)
    expect(svg.match(/data-series="p95"/g)?.length).toBe(1)
    expect(svg).toContain('class="reference"')
    expect(svg).toContain("Latency &lt;ms&gt;")
  })

  test("the window is cut into hour buckets summed up by the metrics' own rule", () => {
    const start = 0
    const observations = [
      observation(0.2 * HOUR, { latencyMs: 100 }),
      timedOut(0.4 * HOUR),
      observation(0.6 * HOUR, { latencyMs: 300 }),
      observation(5.5 * HOUR, { latencyMs: 50, priceUsd: 0.002 })
    ]
    const series = windowSeries(observations, [advertised], start, 24 * HOUR, 24)
    expect(series.availability).toEqual([
      { t: 0.5 * HOUR, y: 2 / 3 },
      { t: 5.5 * HOUR, y: 1 }
    ])
    expect(series.p50LatencyMs.map((p) => p.y)).toEqual([100, 50])
    // The metrics' latency sketch: 300 ms reads as its bin's midpoint, 301 (within 1/128).
    expect(series.p95LatencyMs.map((p) => p.y)).toEqual([301, 50])
    expect(series.observedPriceUsd.map((p) => p.y)).toEqual([0.001, 0.002])
  })

  test("the table's query string is read leniently", () => {
    expect(
      parseCatalogQuery(new URLSearchParams("sort=p95&dir=desc&page=3&status=OFFLINE&capability=rwa.inspect"))
    ).toEqual({
      sort: "p95",
      descending: true,
      page: 3,
      status: "OFFLINE",
      capability: "rwa.inspect"
    })
    expect(parseCatalogQuery(new URLSearchParams("sort=drop%20table&page=-1&status=nope"))).toEqual({
      sort: "provider",
      descending: false,
      page: 1
    })
  })

  test("who sees facilitators and the journal", () => {
    expect(sectionAccess(false, { _tag: "Anonymous" })).toEqual({ facilitators: null, journal: null })
    const anonymous = sectionAccess(true, { _tag: "Anonymous" })
    expect([anonymous.facilitators === null, anonymous.journal === null]).toEqual([false, false])
    expect(sectionAccess(true, { _tag: "Invalid" }).journal).toContain("matches no configured key")
    expect(sectionAccess(true, { _tag: "Key", role: "buyer" })).toEqual({
      facilitators: null,
      journal: "The settlement journal needs an API key whose role is operator."
    })
    expect(sectionAccess(true, { _tag: "Key", role: "operator" })).toEqual({ facilitators: null, journal: null })
  })
})

const observationMetrics = {
  resourceId: ResourceId.make("x"),
  availability24h: 1,
  paymentInterfaceSuccessRate: 1,
  transactionSuccessRate: 0,
  p50LatencyMs: 10,
  p95LatencyMs: 20,
  observedPriceUsd: 0.001,
  priceConsistency: 1,
  reliability: 1,
  confidence: 0.5,
  observationCount: 3,
  lastVerified: null
}

describe("labels (pure)", () => {
  test("a path becomes its route template; literal routes win over parameters; unknown paths share one label", () => {
    const route = routeMatcher([
      "/v1/resources/:id",
      "/v1/resources/search",
      "/status/resources/:id",
      "/status/style.css",
      "/status"
    ])
    expect(route("/v1/resources/abc.def")).toBe("/v1/resources/:id")
    expect(route("/v1/resources/search")).toBe("/v1/resources/search")
    expect(route("/status/style.css")).toBe("/status/style.css")
    expect(route("/status/")).toBe("/status")
    expect(route("/wp-admin/setup.php")).toBe("unmatched")
  })

  test("a settle's result and code: settled, pending, declined, refused (4xx codes), error (5xx, defects)", () => {
    expect(settleLabels(Exit.succeed({ success: true, transaction: "ab" }))).toEqual({ result: "settled", code: "OK" })
    expect(settleLabels(Exit.succeed({ success: false, transaction: "" }))).toEqual({
      result: "declined",
      code: "DECLINED"
    })
    expect(
      settleLabels(Exit.succeed({ success: false, errorReason: "settlement_pending", transaction: "ab" }))
    ).toEqual({
      result: "pending",
      code: "SETTLEMENT_PENDING"
    })
    // Pending without a transaction names nothing to follow: an ordinary decline.
    expect(settleLabels(Exit.succeed({ success: false, errorReason: "settlement_pending", transaction: "" }))).toEqual({
      result: "declined",
      code: "DECLINED"
    })
    expect(settleLabels(Exit.fail(new PolicyDenied({ message: "no", code: "PRICE_EXCEEDS_LIMIT" })))).toEqual({
      result: "refused",
      code: "POLICY_DENIED"
    })
    expect(settleLabels(Exit.fail(new FeeBudgetExhausted({ message: "no", retryAfterSeconds: 1 })))).toEqual({
      result: "refused",
      code: "FEE_BUDGET_EXHAUSTED"
    })
    expect(settleLabels(Exit.fail(new NotFound({ message: "no" })))).toEqual({ result: "refused", code: "NOT_FOUND" })
    expect(settleLabels(Exit.fail(new SettlementIndeterminate({ message: "?" })))).toEqual({
      result: "error",
      code: "SETTLEMENT_INDETERMINATE"
    })
    expect(settleLabels(Exit.die(new Error("boom")))).toEqual({ result: "error", code: "INTERNAL" })
    expect(settleLabels(Exit.fail({ error: "free text from somewhere" }))).toEqual({ result: "error", code: "OTHER" })
  })
})

/** Seeds `n` listed resources with metrics rows by SQL alone (a recursive CTE), as fast as the store can take them. */
const seedCatalog = (n: number, nowMs: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`INSERT INTO providers (id, name) VALUES ('p', 'Provider')`
    yield* sql.unsafe(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ${n})
      INSERT INTO resources (id, provider_id, type, name, description, url, method, status, verification_level, source, listed, created_at, updated_at)
      SELECT printf('r%06d', i), 'p', 'http', printf('resource %d', i), '', printf('http://127.0.0.1:9/%d', i), 'GET',
        CASE i % 4 WHEN 0 THEN 'LIVE' WHEN 1 THEN 'DEGRADED' WHEN 2 THEN 'OFFLINE' ELSE 'PAYMENT_VERIFIED' END, i % 5, 'config', 1, '', ''
      FROM seq`)
    yield* sql.unsafe(`INSERT INTO resource_capabilities (resource_id, capability)
      SELECT id, CASE CAST(substr(id, 2) AS INTEGER) % 3 WHEN 0 THEN 'a' WHEN 1 THEN 'b' ELSE 'c' END FROM resources`)
    // Counts 1..40 and ages 0..30 h: some rows outside the 24 h window, so confidence 0 and empty figures.
    yield* sql.unsafe(`INSERT INTO resource_metrics (resource_id, availability, payment_interface_success_rate, transaction_success_rate,
        p50_latency_ms, p95_latency_ms, price_consistency, reliability, observation_count, last_observed_at, valid_challenge_seen,
        transaction_verified, updated_at)
      SELECT id, (CAST(substr(id, 2) AS INTEGER) % 101) / 100.0, 1, 0, 10, CAST(substr(id, 2) AS INTEGER) % 997, 1, 1,
        1 + CAST(substr(id, 2) AS INTEGER) % 40,
        strftime('%Y-%m-%dT%H:%M:%fZ', (${nowMs} - (CAST(substr(id, 2) AS INTEGER) * 7919 % 108000) * 1000) / 1000.0, 'unixepoch'),
        1, 0, '' FROM resources`)
  })

describe("the catalog table in the store", () => {
  const config = testConfig().verification
  const nowMs = Date.parse("2026-06-01T12:00:00.000Z")
  const clock: TableClock = {
    nowMs,
    windowMs: config.windowHours * HOUR,
    sampleScale: config.confidenceSampleScale,
    halfLifeMs: config.confidenceHalfLifeSeconds * 1000
  }

  it.live(
    "100k resources: one page of 50, filtered and sorted by the store; confidence ordered as confidence() computes it",
    () =>
      Effect.gen(function* () {
        const program = Effect.gen(function* () {
          yield* seedCatalog(100_000, nowMs)
          const table = yield* CatalogTableRepo
          const started = performance.now()
          const first = yield* table.page({ sort: "confidence", descending: true, offset: 0, limit: 50, clock })
          const elapsedMs = performance.now() - started
          const filtered = yield* table.page({
            sort: "p95",
            descending: false,
            offset: 100,
            limit: 50,
            clock,
            status: "OFFLINE",
            capability: "b"
          })
          const sql = yield* SqlClient.SqlClient
          const rows = yield* sql<{
            id: string
            n: number
            at: string
          }>`SELECT resource_id AS id, observation_count AS n, last_observed_at AS at
        FROM resource_metrics WHERE ${sql.in(
          "resource_id",
          first.rows.map((r) => r.id)
        )}`
          return { first, filtered, elapsedMs, rows, counts: yield* table.counts() }
        })
        const { first, filtered, elapsedMs, rows, counts } = yield* Effect.provide(program, StoreTest)
        expect(first.total).toBe(100_000)
        expect(first.rows).toHaveLength(50)
        // The top 50 by confidence in SQL are the top 50 by the service's own formula, in that order.
        const byId = new Map(rows.map((r) => [r.id, confidence(Number(r.n), nowMs - Date.parse(r.at), config)]))
        const computed = first.rows.map((r) => byId.get(r.id)!)
        expect(computed).toEqual([...computed].sort((a, b) => b - a))
        expect(computed[0]).toBeGreaterThan(0.9)
        expect(elapsedMs).toBeLessThan(5_000)
        expect(filtered.total).toBe(8_333)
        expect(filtered.rows.every((r) => r.status === "OFFLINE" && r.capabilities.includes("b"))).toBe(true)
        expect(counts.reduce((n, c) => n + c.count, 0)).toBe(100_000)
      }),
    60_000
  )
})

describe("the status page over HTTP with API keys", () => {
  const OPERATOR_KEY = "status-operator-key"
  const BUYER_KEY = "status-buyer-key"

  test("the catalog is public; facilitators need a key; the journal an operator key; the page sends a strict CSP", async () => {
    const server = await startServer(
      testConfig({
        apiKeys: [
          { principal: "ops", sha256: apiKeyHash(OPERATOR_KEY), role: "operator" },
          { principal: "agent-1", sha256: apiKeyHash(BUYER_KEY) }
        ]
      })
    )
    try {
      // Raw: the status page is HTML beside the contract, not one of its endpoints.
      const get = (key?: string) =>
        request(`${server.url}/status`, key === undefined ? {} : { headers: { authorization: `Bearer ${key}` } })
      const anonymous = await get()
      expect(anonymous.status).toBe(200)
      expect(anonymous.headers.get("content-security-policy")).toContain("default-src 'none'")
      expect(anonymous.body).toContain('<table class="catalog">')
      expect(anonymous.body).not.toContain('<table class="facilitators">')
      expect(anonymous.body).not.toContain('<div class="counts">')
      const buyer = await get(BUYER_KEY)
      expect(buyer.body).not.toContain('<div class="counts">')
      expect(buyer.body).toContain("needs an API key whose role is operator")
      const operator = await get(OPERATOR_KEY)
      expect(operator.body).toContain('<div class="counts">')
      const wrong = await get("not-a-key")
      expect(wrong.status).toBe(200)
      expect(wrong.body).toContain("matches no configured key")
      for (const page of [anonymous, buyer, operator, wrong]) {
        expect(page.body).not.toContain(OPERATOR_KEY)
        expect(page.body).not.toContain(BUYER_KEY)
      }
      const root = await fetch(`${server.url}/`, { redirect: "manual" })
      expect([root.status, root.headers.get("location")]).toEqual([302, "/status"])
      expect((await request(`${server.url}/status/resources/no-such-id`)).status).toBe(404)
    } finally {
      await server.close()
    }
  })
})
