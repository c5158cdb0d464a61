import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime, TestClock, TestContext } from "effect"
import { ServicesLive } from "../src/app.js"
import { Discovery } from "../src/discovery/Discovery.js"
import { ResourceId } from "../src/domain/ids.js"
import { Router } from "../src/routing/Router.js"
import { Prober } from "../src/verification/Prober.js"
import { entry } from "./fixtures/verificationStack.js"
import { startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { testConfig } from "./support/server.js"

/**
 * verification.delistAfterHours (72 by default) on a controllable clock: probes are real requests
 * to the fixture, but their time, and every reader's, is the TestClock's.
 */
const HOUR = 3_600_000
const T0 = Date.parse("2026-11-01T00:00:00.000Z")
let fixture: X402Fixture
let runtime: ManagedRuntime.ManagedRuntime<any, unknown>

beforeAll(async () => {
  fixture = await startX402Fixture()
  const base = testConfig()
  runtime = ManagedRuntime.make(
    ServicesLive(
      testConfig({
        catalog: [entry("fresh", fixture.url("/paid/fresh")), entry("steady", fixture.url("/paid/steady"))],
        probes: { ...base.probes, trustedOrigins: [fixture.origin], timeoutMs: 2000 }
      })
    )
  )
})
afterAll(async () => {
  await runtime.dispose()
  await fixture.stop()
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

const at = (hours: number) => runtime.runPromise(probeAt(hours).pipe(Effect.provide(TestContext.TestContext)))

describe("delisting after verification.delistAfterHours of unhealthy probes", () => {
  test("a resource unhealthy for 72 h leaves discovery, search and routes, keeps its history, and returns when healthy", async () => {
    expect(await at(0)).toMatchObject({
      healthy: true,
      listed: true,
      inDiscovery: true,
      inSearch: true,
      inRoutes: true
    })
    fixture.down.add("/paid/fresh")
    // Unhealthy from hour 1: still listed at hour 72 (71 h of failures)...
    expect(await at(1)).toMatchObject({ healthy: false, listed: true, inDiscovery: true })
    expect(await at(72)).toMatchObject({ healthy: false, listed: true, inDiscovery: true, inSearch: true })
    // ...and gone at hour 73, once the run of unhealthy probes has lasted 72 h.
    const gone = await at(73)
    expect(gone).toMatchObject({ healthy: false, listed: false, inDiscovery: false, inSearch: false, inRoutes: false })
    // Kept in the store, the delisting recorded as the probe's, with the run it measured.
    const kept = await runtime.runPromise(Effect.flatMap(Discovery, (d) => d.get(ResourceId.make("fresh"))))
    expect(kept.listing.listed).toBe(false)
    expect(kept.curation.lastListingChange).toMatchObject({
      listed: false,
      actor: "probe",
      reason: "probes unhealthy for 72 h or more (since 2026-11-01T01:00:00.000Z); listed again after a healthy probe"
    })
    fixture.down.delete("/paid/fresh")
    expect(await at(74)).toMatchObject({
      healthy: true,
      listed: true,
      inDiscovery: true,
      inSearch: true,
      inRoutes: true
    })
  })

  test("a healthy probe in between restarts the count", async () => {
    fixture.down.add("/paid/fresh")
    expect(await at(100)).toMatchObject({ healthy: false, listed: true })
    fixture.down.delete("/paid/fresh")
    expect(await at(150)).toMatchObject({ healthy: true, listed: true })
    fixture.down.add("/paid/fresh")
    expect(await at(151)).toMatchObject({ healthy: false, listed: true })
    expect(await at(200)).toMatchObject({ healthy: false, listed: true })
    expect(await at(223)).toMatchObject({ healthy: false, listed: false })
    fixture.down.delete("/paid/fresh")
  })
})
