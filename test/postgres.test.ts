import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Either } from "effect"
import type { Config } from "../src/config.js"
import { ReceiptId, ResourceId, SettlementId } from "../src/domain/ids.js"
import { verifyReceipt } from "../src/receipts/receipt.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { commitWithoutFlush } from "../src/store/commitDurability.js"
import { MetricsRepo } from "../src/store/MetricsRepo.js"
import { migrationCount } from "../src/store/migrations/index.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { StoreTransactions } from "../src/store/StoreTransactions.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { Prober } from "../src/verification/Prober.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { type FixtureLedger, startFixtureLedger } from "./fixtures/ledger.js"
import { advertised } from "./fixtures/observations.js"
import { seededBuyer, settleBody, signedPayment } from "./fixtures/stellarPayment.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it, runScoped } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { type PostgresCluster, pgQuery, startPostgres } from "./support/postgres.js"
import { spawnServe } from "./support/serveProcess.js"
import { ledgerAt, NO_LEDGER, refusal, request, startServer, testConfig } from "./support/server.js"

/**
 * The service on a real PostgreSQL server: the same migrations and repositories SQLite runs, and
 * the settlement budget shared by two service instances (two connection pools) on one database.
 * The server binaries come from npm (test/support/postgres.ts).
 */

type Server = Awaited<ReturnType<typeof startServer>>

describe("the service on PostgreSQL", () => {
  let cluster: PostgresCluster
  let fixture: X402Fixture
  let ledger: FixtureLedger
  const servers: Array<Server> = []
  const start = async (config: Config) => {
    const server = await startServer(config)
    servers.push(server)
    return server
  }

  beforeAll(async () => {
    cluster = await startPostgres()
    fixture = await startX402Fixture()
    ledger = startFixtureLedger()
  })
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()))
    await fixture?.stop()
    ledger?.stop()
    await cluster?.stop()
  })

  /** A config on `database` whose one catalog resource is the fixture's real x402 route. */
  const fixtureConfig = (database: string, overrides: Partial<Config> = {}) => {
    const base = testConfig()
    return testConfig({
      database,
      catalog: [entry("fixture.paid", fixture.url("/paid"))],
      probes: { ...base.probes, allowPrivateTargets: true },
      signer: { ed25519KeyFile: join(mkdtempSync(join(tmpdir(), "sextant-pg-signer-")), "signer.key") },
      ledger: ledgerAt(ledger),
      ...overrides
    })
  }
  /** The fixture resource, as the typed client names it. */
  const paid = { path: { id: ResourceId.make("fixture.paid") } }
  /** A live probe of the fixture resource: the evidence that makes its payee eligible. */
  const probe = (server: Server) =>
    it.run(server.client.verification.validate({ payload: { resourceId: paid.path.id } }))
  const probedServer = async (database: string) => {
    const server = await start(fixtureConfig(database))
    return { server, validated: await probe(server) }
  }

  test("migrations apply, the demo catalog upserts idempotently across two starts, reads and health work", async () => {
    const url = await cluster.createDatabase("catalog")
    // Trust auth ignores the password; it is there to show it never leaves the config.
    const withPassword = url.replace("postgres@", "postgres:pg-secret-password@")
    const config = testConfig({ database: withPassword })
    const counts = async () =>
      (
        await pgQuery<{ resources: string; options: string; capabilities: string; migrations: string }>(
          url,
          `SELECT (SELECT COUNT(*) FROM resources) AS resources, (SELECT COUNT(*) FROM payment_options) AS options,
             (SELECT COUNT(*) FROM resource_capabilities) AS capabilities, (SELECT COUNT(*) FROM sextant_migrations) AS migrations`
        )
      )[0]

    const first = await start(config)
    const listedFirst = await it.run(first.client.resources.list({ urlParams: {} }))
    const countsFirst = await counts()
    await first.close()
    const second = await start(config)
    const listed = await it.run(second.client.resources.list({ urlParams: {} }))

    expect(listed.resources).toHaveLength(config.catalog.length)
    expect(listed).toEqual(listedFirst)
    expect(await counts()).toEqual(countsFirst)
    expect(Number(countsFirst?.resources)).toBe(config.catalog.length)
    expect(Number(countsFirst?.migrations)).toBe(migrationCount)

    const sample = config.catalog[0]!
    const one = await it.run(second.client.resources.get({ path: { id: sample.resource.id } }))
    expect(one.resource).toMatchObject({ id: sample.resource.id, status: "DISCOVERED", verificationLevel: 0 })
    expect(one.paymentOptions).toEqual(sample.paymentOptions)
    // NOT_FOUND is the contract's 404.
    expect(
      await refusal(second.client.resources.get({ path: { id: ResourceId.make("no.such.resource") } }))
    ).toMatchObject({ error: "NOT_FOUND" })

    const health = await it.run(second.client.health.dependencies())
    expect(health.store).toEqual({
      kind: "postgres",
      location: `postgres://127.0.0.1:${new URL(url).port}/catalog`,
      journalMode: null,
      synchronous: null,
      durable: true
    })
    expect(JSON.stringify(health)).not.toContain("pg-secret-password")
  })

  test("instances started together on an empty database all start, and the migrations run once", async () => {
    // Three rounds: the race between instances creating the migrations table does not show every time.
    for (const round of [1, 2, 3]) {
      const url = await cluster.createDatabase(`together_${round}`)
      const started = await Promise.all([1, 2, 3].map(() => start(testConfig({ database: url }))))
      expect(started).toHaveLength(3)
      const [migrations] = await pgQuery<{ n: string }>(url, "SELECT COUNT(*) AS n FROM sextant_migrations")
      expect(Number(migrations?.n)).toBe(migrationCount)
      await Promise.all(started.map((s) => s.close()))
    }
  })

  test("a live probe is stored: observation, metrics and PAYMENT_VERIFIED read back", async () => {
    const { server, validated } = await probedServer(await cluster.createDatabase("verification"))
    expect(validated).toMatchObject({ outcome: "healthy", status: "PAYMENT_VERIFIED", verificationLevel: 2 })

    const resource = await it.run(server.client.resources.get(paid))
    expect(resource.resource).toMatchObject({ status: "PAYMENT_VERIFIED", verificationLevel: 2 })
    expect(resource.transitions.map((t) => [t.from, t.to])).toEqual([
      ["VALIDATING", "PAYMENT_VERIFIED"],
      ["DISCOVERED", "VALIDATING"]
    ])
    const metrics = await it.run(server.client.verification.metrics(paid))
    expect(metrics).toMatchObject({
      resourceId: "fixture.paid",
      observationCount: 1,
      availability24h: 1,
      paymentInterfaceSuccessRate: 1,
      observedPriceUsd: 0.001
    })
    expect(metrics.p50LatencyMs).toBeNumber()
    const observations = await it.run(server.client.verification.observations({ ...paid, urlParams: {} }))
    expect(observations.observations).toEqual([
      expect.objectContaining({
        id: validated.observation.id,
        outcome: "healthy",
        httpStatus: 402,
        x402Version: 2,
        payTo: FIXTURE_PAY_TO
      })
    ])

    // A second probe (the schedule's: a caller's validation within the interval is not recorded):
    // the window counts both, and pages go newest first through the cursor.
    const again = {
      body: await runScoped(
        server.runtime,
        Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("fixture.paid")))
      )
    }
    expect((await it.run(server.client.verification.metrics(paid))).observationCount).toBe(2)
    const newest = await it.run(server.client.verification.observations({ ...paid, urlParams: { limit: 1 } }))
    expect(newest.observations.map((o) => o.id)).toEqual([again.body.observation.id])
    const older = await it.run(
      server.client.verification.observations({ ...paid, urlParams: { limit: 1, before: newest.nextBefore! } })
    )
    expect(older).toEqual({
      resourceId: ResourceId.make("fixture.paid"),
      observations: [expect.objectContaining({ id: validated.observation.id })],
      nextBefore: null,
      nextCursor: null,
      economic: []
    })

    // The status page's table sorts and filters in SQL (dates, exp, power): every key works on Postgres too.
    // Raw, here and for the resource's page below: the status pages are HTML, outside the JSON contract.
    for (const sort of [
      "provider",
      "resource",
      "capability",
      "price",
      "status",
      "level",
      "availability",
      "p95",
      "confidence",
      "lastVerified"
    ]) {
      const page = await request(`${server.url}/status?sort=${sort}&dir=desc&status=PAYMENT_VERIFIED`)
      expect([sort, page.status]).toEqual([sort, 200])
      expect(page.body).toContain('data-id="fixture.paid"')
    }
    expect((await request(`${server.url}/status/resources/fixture.paid`)).status).toBe(200)
    // Raw: /metrics is Prometheus text, outside the JSON contract.
    const metricsText = await (await fetch(`${server.url}/metrics`)).text()
    expect(metricsText).toContain('sextant_catalog_resources{status="PAYMENT_VERIFIED",level="2"} 1')
  })

  test("two service instances on one database, 40 concurrent settles against a fee budget for 10: exactly 10 settle", async () => {
    const facilitator: FixtureFacilitator = startFacilitator({ ledger })
    try {
      const database = await cluster.createDatabase("settlement")
      const overrides = {
        facilitators: [{ id: "a", url: facilitator.url }],
        budgets: { ...testConfig().budgets, feeCeilingStroops: 1_000, globalFeeStroops: 10_000 }
      }
      // Started together on an empty database, as replicas are: both migrate and load the catalog.
      const [a, b] = await Promise.all([
        start(fixtureConfig(database, overrides)),
        start(fixtureConfig(database, overrides))
      ])
      expect((await probe(a)).status).toBe("PAYMENT_VERIFIED")
      for (const server of [a, b]) {
        await pollUntil(
          "the facilitator is polled healthy",
          async () => (await it.run(server.client.x402.facilitators())).facilitators,
          (found) => found?.[0]?.healthy === true
        )
      }

      // One buyer per payment, so each settle is its own principal and only the global fee budget binds.
      const payments = await Promise.all(
        Array.from({ length: 40 }, (_, i) => signedPayment(FIXTURE_PAY_TO, { buyer: seededBuyer(i + 1) }))
      )
      const settle = (server: Server, p: (typeof payments)[number]) =>
        server.client.x402.settle({ payload: settleBody(p.payment, p.requirements), headers: {} })
      // Each answer as settled or refused: the typed client decodes a refusal by the status the contract gives its code.
      const answers = await Promise.all(payments.map((p, i) => it.run(Effect.either(settle(i % 2 === 0 ? a : b, p)))))
      const settled = answers.filter(Either.isRight).map((r) => r.right)
      const refused = answers.filter(Either.isLeft).map((r) => r.left)
      expect(settled).toHaveLength(10)
      expect(refused).toHaveLength(30)
      for (const r of settled) expect(r).toMatchObject({ success: true, network: "stellar:testnet" })
      // FEE_BUDGET_EXHAUSTED is the contract's 429.
      for (const r of refused) expect(r).toMatchObject({ error: "FEE_BUDGET_EXHAUSTED" })
      expect(facilitator.calls("/settle")).toBe(10)
      // A repeat reaches the other instance: it answers from the shared journal, and nothing is re-sent.
      const first = answers.findIndex(Either.isRight)
      const repeat = await it.run(settle(first % 2 === 0 ? b : a, payments[first]!))
      expect(repeat).toEqual(settled[0]!)
      expect(facilitator.calls("/settle")).toBe(10)

      const journal = await pgQuery<{ id: string; state: string; fee_stroops: string | number }>(
        database,
        "SELECT id, state, fee_stroops FROM settlements"
      )
      expect(journal).toHaveLength(10)
      expect(journal.every((r) => r.state === "settled" && Number(r.fee_stroops) === 1_000)).toBe(true)
      const record = await it.run(a.client.x402.settlement({ path: { id: SettlementId.make(journal[0]!.id) } }))
      expect(record).toMatchObject({
        state: "settled",
        worstCaseUsd: 0.001,
        payTo: FIXTURE_PAY_TO,
        backendId: "a"
      })
      // A settlement the ledger confirms is transaction evidence: both instances read level 3 from the shared store.
      const resource = await pollUntil(
        "the settlements are confirmed on the ledger",
        () => it.run(b.client.resources.get(paid)),
        // Each instance re-derives as it confirms; with two distinct payers needed, one that saw a
        // single confirmation may write its figures last for a moment: wait for both to agree.
        (r) => r.resource.verificationLevel === 3 && r.metrics.transactionSuccessRate === 1
      )
      expect(resource.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
      expect(resource.metrics.transactionSuccessRate).toBe(1)
    } finally {
      await facilitator.stop()
    }
  })

  test("two instances on one database share a rate limit: 40 verifies from one client, 10 admitted in all", async () => {
    const database = await cluster.createDatabase("limits")
    const base = testConfig()
    const limited = { ...base.limits, verify: { requests: 10, windowSeconds: 60 } }
    const a = await start(fixtureConfig(database, { limits: limited }))
    const b = await start(fixtureConfig(database, { limits: limited }))
    // Raw, an empty body the contract refuses: each admitted request is refused 400 after it was counted, so nothing else is needed.
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        request(`${(i % 2 === 0 ? a : b).url}/x402/verify`, { method: "POST", json: {} })
      )
    )
    expect(answers.filter((r) => r.status === 400)).toHaveLength(10)
    const refused = answers.filter((r) => r.status === 429)
    expect(refused).toHaveLength(30)
    for (const r of refused) expect(r.body.error).toBe("RATE_LIMITED")
  })

  test("receipts: created, read back unchanged and verified", async () => {
    // One buyer's receipt is the evidence under test (trust.level3.test.ts covers the distinct-payer threshold).
    const database = await cluster.createDatabase("receipts")
    const server = await start(
      fixtureConfig(database, { verification: { ...testConfig().verification, minDistinctPayers: 1 } })
    )
    await probe(server)
    const transactionHash = ledger.addTransaction({
      transfer: {
        contract: advertised.asset,
        from: seededBuyer(60).publicKey(),
        to: FIXTURE_PAY_TO,
        amount: BigInt(advertised.amount)
      },
      closedAt: new Date()
    })
    const purchase = {
      request: { capability: "fixture.probe", intent: "issuer check" },
      payment: {
        network: advertised.network,
        scheme: "exact" as const,
        asset: advertised.asset,
        amount: advertised.amount,
        transactionHash
      },
      response: { status: 200, body: '{"issuer":"ok"}' }
    }
    const created = await it.run(server.client.receipts.create({ payload: purchase }))
    expect(created).toMatchObject({ service: { resourceId: "fixture.paid" }, payment: { transactionHash } })
    expect(verifyReceipt(created).valid).toBe(true)

    const id = { path: { id: created.receiptId } }
    const fetched = await it.run(server.client.receipts.get(id))
    expect(fetched).toEqual(created)
    expect(verifyReceipt(fetched).valid).toBe(true)
    const checked = await it.run(server.client.receipts.verify(id))
    expect(checked).toMatchObject({ receiptId: created.receiptId, valid: true, algorithm: "ed25519" })
    // NOT_FOUND is the contract's 404.
    expect(await refusal(server.client.receipts.get({ path: { id: ReceiptId.make("rcpt_missing") } }))).toMatchObject({
      error: "NOT_FOUND"
    })
    const resource = await pollUntil(
      "the receipt's transaction is confirmed on the ledger",
      () => it.run(server.client.resources.get(paid)),
      // One request reads the resource and its events in separate queries: wait for both.
      (r) => r.economicEvidence[0]?.state === "confirmed" && r.resource.verificationLevel === 3
    )
    expect(resource.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
  })
  test("a probe batch's multi-row writes, its relaxed commit and rollup retention run on Postgres's SQL", async () => {
    const HOUR = 3_600_000
    const config = {
      ...verificationConfig({ trustedOrigins: [fixture.origin] }),
      database: await cluster.createDatabase("probe_batches")
    }
    const ids = ["pg-a", "pg-b", "pg-c"].map((id) => ResourceId.make(id))
    const out = await it.run(
      Effect.gen(function* () {
        yield* (yield* CatalogWritesRepo).upsertCatalog(ids.map((id) => entry(id, fixture.url(`/paid/${id}`))))
        const prober = yield* Prober
        yield* prober.syncSchedule
        // One batch: three observations, three metrics rows, three schedule completions.
        const claimed = yield* prober.runDue("pg-test", 10)
        const schedule = yield* (yield* SqlClient.SqlClient).unsafe<{ due_ms: unknown; lease_owner: string | null }>(
          "SELECT resource_id, due_ms, lease_owner FROM probe_schedule ORDER BY resource_id"
        )
        const cutoff = Date.now() - config.probes.retentionDays * 24 * HOUR
        const observations = yield* ObservationsRepo
        yield* observations.upsertRollups(
          ids.flatMap((resourceId) =>
            [-2, -1, 0, 1].map((h) => ({
              resourceId,
              rollup: {
                startMs: Math.floor(cutoff / HOUR) * HOUR + h * HOUR,
                probes: 1,
                answered: 1,
                healthy: 1,
                priceMatches: 1,
                connectFailures: 0,
                firstHealthyMs: null,
                latency: [20, 1]
              }
            }))
          )
        )
        yield* prober.prune
        const left = yield* Effect.forEach(ids, (id) =>
          Effect.map(observations.rollups(ResourceId.make(id), 0, Number.MAX_SAFE_INTEGER), (rows) => rows.length)
        )
        const metrics = yield* (yield* EvidenceReader).forResources(ids)
        return { claimed, schedule, left, levels: ids.map((id) => metrics.get(id)?.verificationLevel) }
      }).pipe(Effect.provide(verificationStack(config)))
    )
    expect(out.claimed).toBe(3)
    expect(out.schedule.map((r) => r.lease_owner)).toEqual([null, null, null])
    expect(out.schedule.every((r) => Number(r.due_ms) > Date.now())).toBe(true)
    // The three hours starting before the cutoff went, the one after it stayed.
    expect(out.left).toEqual([1, 1, 1])
    expect(out.levels).toEqual([2, 2, 2])
  })

  test("a commit without a flush turns synchronous_commit off for its transaction only", async () => {
    const database = await cluster.createDatabase("commit_flush")
    const show = (sql: SqlClient.SqlClient) =>
      Effect.map(sql<{ synchronous_commit: string }>`SHOW synchronous_commit`, ([row]) => row?.synchronous_commit)
    const out = await it.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const { transaction } = yield* StoreTransactions
        const unflushed = yield* commitWithoutFlush(transaction(show(sql)))
        const flushed = yield* transaction(show(sql))
        return { unflushed, flushed, after: yield* show(sql) }
      }).pipe(Effect.provide(StoreLive(database)))
    )
    expect(out).toEqual({ unflushed: "off", flushed: "on", after: "on" })
  })

  test("the payee shortlist's parts (a quarantined one, a denied provider's one, the first that could pass) run on Postgres's SQL", async () => {
    const config = {
      ...verificationConfig({ trustedOrigins: [fixture.origin] }),
      database: await cluster.createDatabase("payee_shortlist")
    }
    const ids = ["pg-p-a", "pg-p-b", "pg-p-other", "pg-p-quarantined"]
    const out = await it.run(
      Effect.gen(function* () {
        yield* (yield* CatalogWritesRepo).upsertCatalog(
          ids.map((id) => ({
            ...entry(id, fixture.url(`/paid/${id}`)),
            provider: { id: id === "pg-p-other" ? "other" : "fixture", name: id }
          }))
        )
        const prober = yield* Prober
        yield* prober.syncSchedule
        yield* prober.runDue("pg-test", 10)
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE resources SET status = 'QUARANTINED', quarantined_by = 'op' WHERE id = 'pg-p-quarantined'`
        const metrics = yield* MetricsRepo
        const shortlist = (deniedProviders: ReadonlyArray<string>) =>
          Effect.map(
            metrics.payeeShortlist(advertised.payTo, {
              limit: 1,
              deniedProviders,
              observedSince: "2000-01-01T00:00:00.000Z"
            }),
            (rows) => rows.map((r) => `${r.standing.resourceId}/${r.providerId}`).sort()
          )
        return { plain: yield* shortlist([]), denied: yield* shortlist(["other"]) }
      }).pipe(Effect.provide(verificationStack(config)))
    )
    expect(out.plain).toEqual(["pg-p-a/fixture", "pg-p-quarantined/fixture"])
    expect(out.denied).toEqual(["pg-p-a/fixture", "pg-p-other/other", "pg-p-quarantined/fixture"])
  })

  test("two instances share the probing: each resource once per interval, none twice; a killed instance's share is taken within one lease", async () => {
    const database = await cluster.createDatabase("shared_probing")
    const RESOURCES = 2000
    const INTERVAL_MS = 12_000
    const LEASE_MS = 3_000
    // How late a probe may run behind its slot and keep it (probeSlots.ts: half an interval): on a
    // busy 2-core machine both instances, Postgres and the target share two cores.
    const LAG_MS = INTERVAL_MS / 2
    const catalog = Array.from({ length: RESOURCES }, (_, i) =>
      entry(`shared-${String(i).padStart(4, "0")}`, fixture.url(`/paid/${i}`))
    )
    const instance = () =>
      spawnServe(
        (dir) => ({
          database,
          catalog: "catalog.json",
          vertical: { enabled: false },
          probes: {
            intervalSeconds: INTERVAL_MS / 1000,
            leaseSeconds: LEASE_MS / 1000,
            timeoutMs: 1000,
            concurrency: 32,
            allowPrivateTargets: true
          },
          ledger: { sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER },
          signer: { ed25519KeyFile: join(dir, "signer.key") }
        }),
        { "catalog.json": JSON.stringify(catalog) },
        // Loading a 2,000-entry catalog into Postgres takes a while on a busy machine.
        { timeoutMs: 60_000 }
      )
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    /** Per resource, its probe times in [from, to), and the one before `from`. */
    const probeTimes = async (from: number, to: number) => {
      const rows = await pgQuery<{ resource_id: string; observed_at_ms: string }>(
        database,
        `SELECT resource_id, observed_at_ms FROM observations WHERE observed_at_ms >= ${from - INTERVAL_MS * 2} AND observed_at_ms < ${to}
         ORDER BY resource_id, observed_at_ms`
      )
      const times = new Map<string, Array<number>>()
      for (const r of rows) times.set(r.resource_id, [...(times.get(r.resource_id) ?? []), Number(r.observed_at_ms)])
      return catalog.map((e) => {
        const all = times.get(e.resource.id) ?? []
        const inside = all.filter((t) => t >= from)
        const before = all.filter((t) => t < from).at(-1)
        const series = before === undefined ? inside : [before, ...inside]
        const gaps = series.slice(1).map((t, i) => t - series[i]!)
        return { inside: inside.length, shortest: Math.min(...gaps), longest: Math.max(...gaps) }
      })
    }

    const a = await instance()
    let b: Awaited<ReturnType<typeof instance>> | null = null
    try {
      // All new resources are due at once; once every one was probed twice, each is in its slot.
      await pollUntil(
        "every resource probed twice",
        () =>
          pgQuery<{ n: string }>(
            database,
            "SELECT COUNT(*) AS n FROM (SELECT resource_id FROM observations GROUP BY resource_id HAVING COUNT(*) >= 2) t"
          ),
        (rows) => Number(rows[0]?.n) === RESOURCES,
        { timeoutMs: 60_000, everyMs: 500 }
      )
      // The second instance starts once the first settled the catalog: its start-up re-upserts every
      // catalog row, which on Postgres can deadlock with probe batches still moving statuses.
      b = await instance()
      await sleep(INTERVAL_MS)

      // Both running, over two intervals: every resource probed in each interval, never twice for one slot.
      const shared = Date.now()
      await sleep(2 * INTERVAL_MS + 500)
      const both = await probeTimes(shared, shared + 2 * INTERVAL_MS)
      expect(both.filter((r) => r.inside < 1 || r.inside > 3)).toEqual([])
      // Two instances probing one slot would leave two probes moments apart; a slot is an interval wide.
      expect(Math.min(...both.map((r) => r.shortest))).toBeGreaterThan(INTERVAL_MS / 2 - 1000)
      expect(Math.max(...both.map((r) => r.longest))).toBeLessThanOrEqual(INTERVAL_MS + LAG_MS)

      // Kill one instance (SIGKILL: no release of its claims): the other takes over its share, a
      // claim of the dead one waiting at most one lease past its slot.
      const killedAt = Date.now()
      await b.stop()
      b = null
      await sleep(LEASE_MS + 2 * INTERVAL_MS)
      const alone = await probeTimes(killedAt, killedAt + LEASE_MS + 2 * INTERVAL_MS)
      expect(alone.filter((r) => r.inside < 2)).toEqual([])
      expect(Math.min(...alone.map((r) => r.shortest))).toBeGreaterThan(INTERVAL_MS / 2 - 1000)
      expect(Math.max(...alone.map((r) => r.longest))).toBeLessThanOrEqual(INTERVAL_MS + LEASE_MS + LAG_MS)
    } finally {
      await Promise.all([a.stop(), b?.stop()])
    }
  }, 180_000)
})
