import { afterAll, beforeAll, describe, expect } from "bun:test"
import { Effect, Layer } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { TransitionsRepo } from "../src/store/TransitionsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { Prober } from "../src/verification/Prober.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

/**
 * An automatic quarantine against real probes of a local x402 seller that changes its price
 * (docs/verification.md, Quarantine): a seller alternating its price is never routable, one that
 * turns honest is listed again after the stated number of agreeing challenges, spread over at least
 * one probe interval, and priceConsistency still counts what it asked before.
 */

let fixture: X402Fixture
beforeAll(async () => {
  fixture = await startX402Fixture()
})
afterAll(() => fixture.stop())

/** Twice the advertised price: above any tolerance. */
const RAISED = String(Number(FIXTURE_AMOUNT) * 2)
/** One second: the release must span it, so a run of this file takes a few seconds. */
const INTERVAL_SECONDS = 1

const configOf = () =>
  verificationConfig({ trustedOrigins: [fixture.origin], intervalSeconds: INTERVAL_SECONDS, leaseSeconds: 10 })

/** The verification stack with the `ids` of the switching seller in its catalog, released when the test ends. */
const stack = (ids: ReadonlyArray<string>) =>
  Layer.effectDiscard(
    Effect.flatMap(CatalogWritesRepo, (repo) =>
      repo.upsertCatalog(ids.map((id) => entry(id, fixture.url(`/switching/${id}`))))
    )
  ).pipe(Layer.provideMerge(verificationStack(configOf())))

const probe = (id: string) =>
  Effect.map(
    Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make(id))),
    (result) => result.status
  )
const evidence = (id: string) =>
  Effect.all({
    transitions: Effect.flatMap(TransitionsRepo, (repo) => repo.recent(ResourceId.make(id), 50)),
    metrics: Effect.map(
      Effect.flatMap(EvidenceReader, (reader) => reader.forResource(ResourceId.make(id))),
      (e) => e.metrics
    )
  })

describe("an automatic quarantine does not flicker", () => {
  it.live("a seller alternating its price on every probe stays QUARANTINED for the whole run", () =>
    Effect.gen(function* () {
      fixture.asks.set("/switching/alternating", (n) => (n % 2 === 0 ? RAISED : FIXTURE_AMOUNT))
      const statuses: Array<string> = []
      // Twelve probes over more than two intervals: the honest half never adds up to a release.
      for (let i = 0; i < 12; i++) {
        statuses.push(yield* probe("alternating"))
        yield* Effect.sleep(200)
      }
      expect(statuses).toEqual(Array(12).fill("QUARANTINED"))
      const { transitions, metrics } = yield* evidence("alternating")
      expect(transitions.map((t) => t.to)).toEqual(["QUARANTINED", "VALIDATING"])
      expect(metrics.priceConsistency).toBe(0.5)
    }).pipe(Effect.provide(stack(["alternating"])))
  )

  it.live(
    "a seller that turns honest is listed again after the stated number of agreeing probes, spread over an interval",
    () =>
      Effect.gen(function* () {
        fixture.asks.set("/switching/reformed", (n) => (n === 0 ? RAISED : FIXTURE_AMOUNT))
        const needed = configOf().verification.quarantineReleaseChallenges
        expect(yield* probe("reformed")).toBe("QUARANTINED")
        // A burst of agreeing challenges inside one interval is not enough, however many.
        const burst: Array<string> = []
        for (let i = 0; i < needed + 2; i++) burst.push(yield* probe("reformed"))
        expect(burst).toEqual(Array(needed + 2).fill("QUARANTINED"))
        // The next agreeing probe once an interval has passed since the first agreeing one lifts it.
        yield* Effect.sleep(INTERVAL_SECONDS * 1000 + 100)
        expect(yield* probe("reformed")).toBe("PAYMENT_VERIFIED")
        const { transitions, metrics } = yield* evidence("reformed")
        expect(transitions.map((t) => [t.from, t.to])).toEqual([
          ["QUARANTINED", "PAYMENT_VERIFIED"],
          ["VALIDATING", "QUARANTINED"],
          ["DISCOVERED", "VALIDATING"]
        ])
        expect(transitions[1]!.reason).toContain("above the advertised")
        // The history stays: one challenge in all of them asked the raised price.
        expect(metrics.priceConsistency).toBeCloseTo((needed + 3) / (needed + 4), 3)
      }).pipe(Effect.provide(stack(["reformed"])))
  )

  it.live("spaced one interval apart, exactly the stated number of agreeing probes lifts it", () =>
    Effect.gen(function* () {
      fixture.asks.set("/switching/patient", (n) => (n === 0 ? RAISED : FIXTURE_AMOUNT))
      const needed = configOf().verification.quarantineReleaseChallenges
      const statuses = [yield* probe("patient")]
      for (let i = 0; i < needed; i++) {
        yield* Effect.sleep((INTERVAL_SECONDS * 1000) / (needed - 1) + 50)
        statuses.push(yield* probe("patient"))
      }
      expect(statuses).toEqual([...Array(needed).fill("QUARANTINED"), "PAYMENT_VERIFIED"])
    }).pipe(Effect.provide(stack(["patient"])))
  )
})
