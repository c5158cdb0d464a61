import { afterAll, beforeAll, expect } from "bun:test"
import { Effect, Layer, TestClock } from "effect"
import { ServicesLive } from "../src/app.js"
import { Discovery } from "../src/discovery/Discovery.js"
import { ResourceId } from "../src/domain/ids.js"
import { Router } from "../src/routing/Router.js"
import { Prober } from "../src/verification/Prober.js"
import { entry } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { layer } from "./support/effectTest.js"
import { testConfig } from "./support/server.js"

/**
 * verification.delistAfterHours (72 by default) on a controllable clock: probes are real requests
 * to the fixture, but their time, and every reader's, is the TestClock's.
 */
const HOUR = 3_600_000
const T0 = Date.parse("2026-11-01T00:00:00.000Z")
let fixture: X402Fixture

beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

// Built on the suite's first test, once the fixture (whose URLs the catalog names) is up.
const services = Layer.suspend(() => {
  const base = testConfig()
  return ServicesLive(
    testConfig({
      catalog: [entry("fresh", fixture.url("/paid/fresh")), entry("steady", fixture.url("/paid/steady"))],
      probes: { ...base.probes, trustedOrigins: [fixture.origin], timeoutMs: 2000 }
    })
  )
})

/** At `hours` after T0: probe `fresh`, then read what discovery, search and routing show. */
const probeAt = (hours: number) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(T0 + hours * HOUR)
    const probe = yield* Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("fresh")))
    const discovery = yield* Discovery
    const page = yield* discovery.x402Page({})
    const { resources: hits } = yield* discovery.search({ capability: "fixture.probe" })
    const decision = yield* Effect.flatMap(Router, (r) => r.route({ capability: "fixture.probe" }))
    const detail = yield* discovery.get(ResourceId.make("fresh"))
    const candidates = [decision.selected, ...decision.fallbacks, ...decision.rejected].filter((c) => c !== null)
    return {
      healthy: probe.healthy,
      listed: detail.listing.listed,
      inDiscovery: page.items.some((i) => i.metadata.resourceId === "fresh"),
      inSearch: hits.some((h) => h.resource.id === "fresh"),
      inRoutes: candidates.some((c) => (c as { resourceId: string }).resourceId === "fresh")
    }
  })

layer(services)("delisting after verification.delistAfterHours of unhealthy probes", (it) => {
  it.effect(
    "a resource unhealthy for 72 h leaves discovery, search and routes, keeps its history, and returns when healthy",
    () =>
      Effect.gen(function* () {
        expect(yield* probeAt(0)).toMatchObject({
          healthy: true,
          listed: true,
          inDiscovery: true,
          inSearch: true,
          inRoutes: true
        })
        fixture.down.add("/paid/fresh")
        // Unhealthy from hour 1: still listed at hour 72 (71 h of failures)...
        expect(yield* probeAt(1)).toMatchObject({ healthy: false, listed: true, inDiscovery: true })
        expect(yield* probeAt(72)).toMatchObject({ healthy: false, listed: true, inDiscovery: true, inSearch: true })
        // ...and gone at hour 73, once the run of unhealthy probes has lasted 72 h.
        const gone = yield* probeAt(73)
        expect(gone).toMatchObject({
          healthy: false,
          listed: false,
          inDiscovery: false,
          inSearch: false,
          inRoutes: false
        })
        // Kept in the store, the delisting recorded as the probe's, with the run it measured.
        const kept = yield* Effect.flatMap(Discovery, (d) => d.get(ResourceId.make("fresh")))
        expect(kept.listing.listed).toBe(false)
        expect(kept.curation.lastListingChange).toMatchObject({
          listed: false,
          actor: "probe",
          reason:
            "probes unhealthy for 72 h or more (since 2026-11-01T01:00:00.000Z); listed again after a healthy probe"
        })
        fixture.down.delete("/paid/fresh")
        expect(yield* probeAt(74)).toMatchObject({
          healthy: true,
          listed: true,
          inDiscovery: true,
          inSearch: true,
          inRoutes: true
        })
      })
  )

  it.effect("a healthy probe in between restarts the count", () =>
    Effect.gen(function* () {
      fixture.down.add("/paid/fresh")
      expect(yield* probeAt(100)).toMatchObject({ healthy: false, listed: true })
      fixture.down.delete("/paid/fresh")
      expect(yield* probeAt(150)).toMatchObject({ healthy: true, listed: true })
      fixture.down.add("/paid/fresh")
      expect(yield* probeAt(151)).toMatchObject({ healthy: false, listed: true })
      expect(yield* probeAt(200)).toMatchObject({ healthy: false, listed: true })
      expect(yield* probeAt(223)).toMatchObject({ healthy: false, listed: false })
      fixture.down.delete("/paid/fresh")
    })
  )
})
