/**
 * Routes answer from an in-memory capability index (EvidenceReader.Live). The clock here is a
 * TestClock that only moves when a test moves it, so the index's TTL never expires on its own: a
 * route that sees a change saw it because the write dropped what the index held.
 */

import { Database } from "bun:sqlite"
import { afterAll, beforeAll, describe, expect } from "bun:test"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Either, Layer, Option, TestClock } from "effect"
import { ServicesLive } from "../src/app.js"
import { loadConfig } from "../src/config.js"
import { Curation } from "../src/curation/Curation.js"
import { ResourceId } from "../src/domain/ids.js"
import type { AgentPolicy } from "../src/domain/policy.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import type { RouteDecision } from "../src/domain/routes.js"
import { Router } from "../src/routing/Router.js"
import { ResourceListingRepo } from "../src/store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { StoreTransactions } from "../src/store/StoreTransactions.js"
import { EvidenceReader, ROUTE_READ_TTL_MS } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { advertised, observation } from "./fixtures/observations.js"
import { layer } from "./support/effectTest.js"

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
const nowMs = Date.now()
const operator = { actor: "ops", reason: "route freshness test" }

const route = (constraints?: AgentPolicy) =>
  Effect.flatMap(Router, (router) => router.route({ capability: CAPABILITY, ...(constraints ? { constraints } : {}) }))
const ranked = (d: RouteDecision) => [d.selected, ...d.fallbacks].flatMap((c) => (c ? [c.resourceId] : []))
const rejected = (d: RouteDecision) => d.rejected.map((r) => r.resourceId)
const considered = (d: RouteDecision) => [...ranked(d), ...rejected(d)].sort()

/** A healthy probe of `id`, through the recorder as the prober stores one. */
const probe = (id: string, agoMs = 60_000) =>
  Effect.gen(function* () {
    const record = Option.getOrThrow(yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(ResourceId.make(id))))
    yield* (yield* EvidenceRecorder).recordObservation(
      record,
      observation(nowMs - agoMs, { resourceId: ResourceId.make(id), url: record.resource.url })
    )
  })

afterAll(() => rmSync(folder, { recursive: true, force: true }))

layer(Curation.Live.pipe(Layer.provideMerge(ServicesLive(config))), { testClock: "suite" })(
  "routes over the capability index",
  (it) => {
    beforeAll(() =>
      it.run(
        Effect.gen(function* () {
          yield* TestClock.setTime(nowMs)
          for (const id of ["alpha", "beta", "delta"]) for (const ago of [120_000, 60_000]) yield* probe(id, ago)
        })
      )
    )

    describe("the next route after a write of this process sees it", () => {
      it.effect("the candidates are held: evidence probed meanwhile, gamma is judged for lack of evidence", () =>
        Effect.gen(function* () {
          const decision = yield* route()
          expect(ranked(decision).sort()).toEqual<unknown>(["alpha", "beta", "delta"])
          expect(decision.rejected.map((r) => [r.resourceId, r.decision])).toEqual<unknown>([
            ["gamma", "INSUFFICIENT_DATA"]
          ])
        })
      )

      it.effect("an operator quarantine stops the very next route to the resource; lifting it restores it", () =>
        Effect.gen(function* () {
          expect(ranked(yield* route())).toContain<unknown>("alpha")
          yield* Effect.flatMap(Curation, (curation) => curation.quarantine(ResourceId.make("alpha"), operator))
          const quarantined = yield* route()
          expect(ranked(quarantined)).not.toContain("alpha")
          expect(rejected(quarantined)).toContain<unknown>("alpha")
          yield* Effect.flatMap(Curation, (curation) => curation.unquarantine(ResourceId.make("alpha"), operator))
          expect(ranked(yield* route())).toContain<unknown>("alpha")
        })
      )

      it.effect("a new probe result is in the very next route: gamma, unjudged, is ranked once probed", () =>
        Effect.gen(function* () {
          expect(rejected(yield* route())).toContain<unknown>("gamma")
          yield* probe("gamma")
          const decision = yield* route()
          expect(ranked(decision)).toContain<unknown>("gamma")
          expect(decision.rejected).toEqual([])
        })
      )

      it.effect("an operator delisting removes the resource from the very next route; listing it brings it back", () =>
        Effect.gen(function* () {
          expect(considered(yield* route())).toContain<unknown>("beta")
          yield* Effect.flatMap(Curation, (curation) => curation.unlist(ResourceId.make("beta"), operator))
          expect(considered(yield* route())).not.toContain("beta")
          yield* Effect.flatMap(Curation, (curation) => curation.list(ResourceId.make("beta"), operator))
          expect(considered(yield* route())).toContain<unknown>("beta")
        })
      )

      it.effect("a route read during a write's transaction is not held past its commit", () =>
        Effect.gen(function* () {
          // Let what is held expire, so the route inside the transaction reads the store: it sees the
          // last commit, delta still listed, and must not keep that once the unlisting commits.
          yield* TestClock.adjust(ROUTE_READ_TTL_MS)
          const { transaction } = yield* StoreTransactions
          const during = yield* transaction(
            Effect.gen(function* () {
              yield* Effect.flatMap(ResourceListingRepo, (repo) =>
                repo.setListed(ResourceId.make("delta"), false, operator)
              )
              // Another request, outside this transaction, as the HTTP server would run it.
              return yield* Effect.promise(() => it.run(route()))
            })
          )
          expect(considered(during)).toContain<unknown>("delta")
          expect(considered(yield* route())).not.toContain("delta")
        })
      )
    })

    describe("another process's writes", () => {
      it.effect("are seen once the held candidates are ROUTE_READ_TTL_MS old, not before", () =>
        Effect.gen(function* () {
          expect(considered(yield* route())).toContain<unknown>("alpha")
          // Another process on the same file unlists alpha: nothing tells this one.
          const other = new Database(database)
          other.run("UPDATE resources SET listed = 0 WHERE id = 'alpha'")
          other.close()
          expect(considered(yield* route())).toContain<unknown>("alpha")
          yield* TestClock.adjust(ROUTE_READ_TTL_MS - 1)
          expect(considered(yield* route())).toContain<unknown>("alpha")
          yield* TestClock.adjust(1)
          expect(considered(yield* route())).not.toContain("alpha")
        })
      )
    })

    describe("evidence is derived at each route's own time, not the read's", () => {
      it.effect(
        "held rows' evidence leaves the window when the newest probe does, and equals evidence read afresh",
        () =>
          Effect.gen(function* () {
            const windowMs = config.verification.windowHours * 3_600_000
            const newestProbe = nowMs - 60_000
            yield* Effect.flatMap(TestClock.currentTimeMillis, (t) =>
              TestClock.adjust(newestProbe + windowMs - 500 - t)
            )
            // A buyer who asks for measured reliability: only evidence in the window can give it.
            const reliable = { minProviderReliability: 0.5 }
            const before = yield* route(reliable)
            expect(ranked(before).length).toBeGreaterThan(0)
            yield* TestClock.adjust(600)
            const after = yield* route(reliable)
            // The same held rows (read 600 ms ago, inside the TTL), judged now: no current evidence.
            expect(after.metricsSnapshotAt).toBe(before.metricsSnapshotAt)
            expect(ranked(after)).toEqual([])
            expect(before.rejected).toEqual([])
            expect(after.rejected.map((r) => [r.resourceId, r.codes])).toEqual(
              ranked(before)
                .sort()
                .map((id) => [id, ["RELIABILITY_LIMIT"]])
            )
            const reader = yield* EvidenceReader
            const { candidates } = yield* reader.forCapability(CAPABILITY)
            const held = candidates.map((c) => c.evidence)
            const afresh = yield* reader.forResources(candidates.map((c) => c.record.resource.id))
            expect(held).toEqual(held.map((e) => afresh.get(e.resourceId)!))
          })
      )
    })
  }
)
