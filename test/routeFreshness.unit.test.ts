/**
 * Routes answer from an in-memory capability index (EvidenceReader.Live). The clock here is a
 * TestClock that only moves when a test moves it, so the index's TTL never expires on its own: a
 * route that sees a change saw it because the write dropped what the index held.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Database } from "bun:sqlite"
import { Effect, Either, Layer, ManagedRuntime, Option, TestClock, TestContext } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ServicesLive } from "../src/app.js"
import { loadConfig } from "../src/config.js"
import type { AgentPolicy } from "../src/domain/policy.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import type { RouteDecision } from "../src/domain/routes.js"
import { Curation } from "../src/curation/Curation.js"
import { Router } from "../src/routing/Router.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreTransactions } from "../src/store/StoreTransactions.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { EvidenceReader, ROUTE_READ_TTL_MS } from "../src/verification/EvidenceReader.js"
import { advertised, observation } from "./fixtures/observations.js"
import { ResourceId } from "../src/domain/ids.js"

const CAPABILITY = "fresh.inspect"
const entry = (id: string): CatalogEntry => ({
  resource: {
    id: ResourceId.make(id),
    type: "http",
    name: id,
    description: `route freshness ${id}`,
    url: `http://127.0.0.1:1/${id}`,
    method: "GET",
    capabilities: [CAPABILITY]
  },
  provider: { id: `${id}-provider`, name: id },
  paymentOptions: [advertised]
})

const folder = mkdtempSync(join(tmpdir(), "sextant-route-freshness-"))
const database = join(folder, "sextant.db")
const base = Either.getOrThrow(loadConfig(undefined, {}))
const config = {
  ...base,
  database,
  catalog: ["alpha", "beta", "gamma", "delta"].map(entry),
  vertical: { ...base.vertical, enabled: false }
}
const runtime = ManagedRuntime.make(Layer.merge(Curation.Live.pipe(Layer.provideMerge(ServicesLive(config))), TestContext.TestContext))
const nowMs = Date.now()
const operator = { actor: "ops", reason: "route freshness test" }

const run = <A, E>(effect: Effect.Effect<A, E, any>) => runtime.runPromise(effect as Effect.Effect<A, E, never>)
const route = (constraints?: AgentPolicy) =>
  run(Effect.flatMap(Router, (router) => router.route({ capability: CAPABILITY, ...(constraints ? { constraints } : {}) })))
const ranked = (d: RouteDecision) => [d.selected, ...d.fallbacks].flatMap((c) => (c ? [c.resourceId] : []))
const rejected = (d: RouteDecision) => d.rejected.map((r) => r.resourceId)
const considered = (d: RouteDecision) => [...ranked(d), ...rejected(d)].sort()

/** A healthy probe of `id`, through the recorder as the prober stores one. */
const probe = (id: string, agoMs = 60_000) =>
  run(
    Effect.gen(function* () {
      const record = Option.getOrThrow(yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(ResourceId.make(id))))
      yield* (yield* EvidenceRecorder).recordObservation(record, observation(nowMs - agoMs, { resourceId: ResourceId.make(id), url: record.resource.url }))
    })
  )

beforeAll(async () => {
  await run(TestClock.setTime(nowMs))
  for (const id of ["alpha", "beta", "delta"]) for (const ago of [120_000, 60_000]) await probe(id, ago)
})
afterAll(async () => {
  await runtime.dispose()
  rmSync(folder, { recursive: true, force: true })
})

describe("the next route after a write of this process sees it", () => {
  test("the candidates are held: evidence probed meanwhile, gamma is judged for lack of evidence", async () => {
    const decision = await route()
    expect(ranked(decision).sort()).toEqual<unknown>(["alpha", "beta", "delta"])
    expect(decision.rejected.map((r) => [r.resourceId, r.decision])).toEqual<unknown>([["gamma", "INSUFFICIENT_DATA"]])
  })

  test("an operator quarantine stops the very next route to the resource; lifting it restores it", async () => {
    expect(ranked(await route())).toContain<unknown>("alpha")
    await run(Effect.flatMap(Curation, (curation) => curation.quarantine(ResourceId.make("alpha"), operator)))
    const quarantined = await route()
    expect(ranked(quarantined)).not.toContain("alpha")
    expect(rejected(quarantined)).toContain<unknown>("alpha")
    await run(Effect.flatMap(Curation, (curation) => curation.unquarantine(ResourceId.make("alpha"), operator)))
    expect(ranked(await route())).toContain<unknown>("alpha")
  })

  test("a new probe result is in the very next route: gamma, unjudged, is ranked once probed", async () => {
    expect(rejected(await route())).toContain<unknown>("gamma")
    await probe("gamma")
    const decision = await route()
    expect(ranked(decision)).toContain<unknown>("gamma")
    expect(decision.rejected).toEqual([])
  })

  test("an operator delisting removes the resource from the very next route; listing it brings it back", async () => {
    expect(considered(await route())).toContain<unknown>("beta")
    await run(Effect.flatMap(Curation, (curation) => curation.unlist(ResourceId.make("beta"), operator)))
    expect(considered(await route())).not.toContain("beta")
    await run(Effect.flatMap(Curation, (curation) => curation.list(ResourceId.make("beta"), operator)))
    expect(considered(await route())).toContain<unknown>("beta")
  })

  test("a route read during a write's transaction is not held past its commit", async () => {
    // Let what is held expire, so the route inside the transaction reads the store: it sees the
    // last commit, delta still listed, and must not keep that once the unlisting commits.
    await run(TestClock.adjust(ROUTE_READ_TTL_MS))
    const during = await run(
      Effect.gen(function* () {
        const { transaction } = yield* StoreTransactions
        return yield* transaction(
          Effect.gen(function* () {
            yield* Effect.flatMap(ResourceListingRepo, (repo) => repo.setListed(ResourceId.make("delta"), false, operator))
            // Another request, outside this transaction, as the HTTP server would run it.
            return yield* Effect.promise(() => route())
          })
        )
      })
    )
    expect(considered(during)).toContain<unknown>("delta")
    expect(considered(await route())).not.toContain("delta")
  })
})

describe("another process's writes", () => {
  test("are seen once the held candidates are ROUTE_READ_TTL_MS old, not before", async () => {
    expect(considered(await route())).toContain<unknown>("alpha")
    // Another process on the same file unlists alpha: nothing tells this one.
    const other = new Database(database)
    other.run("UPDATE resources SET listed = 0 WHERE id = 'alpha'")
    other.close()
    expect(considered(await route())).toContain<unknown>("alpha")
    await run(TestClock.adjust(ROUTE_READ_TTL_MS - 1))
    expect(considered(await route())).toContain<unknown>("alpha")
    await run(TestClock.adjust(1))
    expect(considered(await route())).not.toContain("alpha")
  })
})

describe("evidence is derived at each route's own time, not the read's", () => {
  test("held rows' evidence leaves the window when the newest probe does, and equals evidence read afresh", async () => {
    const windowMs = config.verification.windowHours * 3_600_000
    const newestProbe = nowMs - 60_000
    await run(Effect.flatMap(TestClock.currentTimeMillis, (t) => TestClock.adjust(newestProbe + windowMs - 500 - t)))
    // A buyer who asks for measured reliability: only evidence in the window can give it.
    const reliable = { minProviderReliability: 0.5 }
    const before = await route(reliable)
    expect(ranked(before).length).toBeGreaterThan(0)
    await run(TestClock.adjust(600))
    const after = await route(reliable)
    // The same held rows (read 600 ms ago, inside the TTL), judged now: no current evidence.
    expect(after.metricsSnapshotAt).toBe(before.metricsSnapshotAt)
    expect(ranked(after)).toEqual([])
    expect(before.rejected).toEqual([])
    expect(after.rejected.map((r) => [r.resourceId, r.codes])).toEqual(ranked(before).sort().map((id) => [id, ["RELIABILITY_LIMIT"]]))
    const [held, afresh] = await run(
      Effect.gen(function* () {
        const reader = yield* EvidenceReader
        const { candidates } = yield* reader.forCapability(CAPABILITY)
        return [candidates.map((c) => c.evidence), yield* reader.forResources(candidates.map((c) => c.record.resource.id))] as const
      })
    )
    expect(held).toEqual(held.map((e) => afresh.get(e.resourceId)!))
  })
})
