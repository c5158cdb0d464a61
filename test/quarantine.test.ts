import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Effect, ManagedRuntime } from "effect"
import { ResourceId } from "../src/domain/ids.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { TransitionsRepo } from "../src/store/TransitionsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { Prober } from "../src/verification/Prober.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { FIXTURE_AMOUNT, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"

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

const stack = (ids: ReadonlyArray<string>) => {
  const config = verificationConfig({
    trustedOrigins: [fixture.origin],
    intervalSeconds: INTERVAL_SECONDS,
    leaseSeconds: 10
  })
  const runtime = ManagedRuntime.make(verificationStack(config))
  const ready = runtime.runPromise(
    Effect.flatMap(CatalogWritesRepo, (repo) =>
      repo.upsertCatalog(ids.map((id) => entry(id, fixture.url(`/switching/${id}`))))
    )
  )
  const probe = async (id: string) => {
    await ready
    return (await runtime.runPromise(Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make(id))))).status
  }
  const evidence = (id: string) =>
    runtime.runPromise(
      Effect.all({
        transitions: Effect.flatMap(TransitionsRepo, (repo) => repo.recent(ResourceId.make(id), 50)),
        metrics: Effect.map(
          Effect.flatMap(EvidenceReader, (reader) => reader.forResource(ResourceId.make(id))),
          (e) => e.metrics
        )
      })
    )
  return { config, runtime, probe, evidence }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe("an automatic quarantine does not flicker", () => {
  test("a seller alternating its price on every probe stays QUARANTINED for the whole run", async () => {
    fixture.asks.set("/switching/alternating", (n) => (n % 2 === 0 ? RAISED : FIXTURE_AMOUNT))
    const { probe, evidence, runtime } = stack(["alternating"])
    const statuses: Array<string> = []
    // Twelve probes over more than two intervals: the honest half never adds up to a release.
    for (let i = 0; i < 12; i++) {
      statuses.push(await probe("alternating"))
      await sleep(200)
    }
    expect(statuses).toEqual(Array(12).fill("QUARANTINED"))
    const { transitions, metrics } = await evidence("alternating")
    expect(transitions.map((t) => t.to)).toEqual(["QUARANTINED", "VALIDATING"])
    expect(metrics.priceConsistency).toBe(0.5)
    await runtime.dispose()
  })

  test("a seller that turns honest is listed again after the stated number of agreeing probes, spread over an interval", async () => {
    fixture.asks.set("/switching/reformed", (n) => (n === 0 ? RAISED : FIXTURE_AMOUNT))
    const { config, probe, evidence, runtime } = stack(["reformed"])
    const needed = config.verification.quarantineReleaseChallenges
    expect(await probe("reformed")).toBe("QUARANTINED")
    // A burst of agreeing challenges inside one interval is not enough, however many.
    const burst: Array<string> = []
    for (let i = 0; i < needed + 2; i++) burst.push(await probe("reformed"))
    expect(burst).toEqual(Array(needed + 2).fill("QUARANTINED"))
    // The next agreeing probe once an interval has passed since the first agreeing one lifts it.
    await sleep(INTERVAL_SECONDS * 1000 + 100)
    expect(await probe("reformed")).toBe("PAYMENT_VERIFIED")
    const { transitions, metrics } = await evidence("reformed")
    expect(transitions.map((t) => [t.from, t.to])).toEqual([
      ["QUARANTINED", "PAYMENT_VERIFIED"],
      ["VALIDATING", "QUARANTINED"],
      ["DISCOVERED", "VALIDATING"]
    ])
    expect(transitions[1]!.reason).toContain("above the advertised")
    // The history stays: one challenge in all of them asked the raised price.
    expect(metrics.priceConsistency).toBeCloseTo((needed + 3) / (needed + 4), 3)
    await runtime.dispose()
  })

  test("spaced one interval apart, exactly the stated number of agreeing probes lifts it", async () => {
    fixture.asks.set("/switching/patient", (n) => (n === 0 ? RAISED : FIXTURE_AMOUNT))
    const { config, probe, runtime } = stack(["patient"])
    const needed = config.verification.quarantineReleaseChallenges
    const statuses = [await probe("patient")]
    for (let i = 0; i < needed; i++) {
      await sleep((INTERVAL_SECONDS * 1000) / (needed - 1) + 50)
      statuses.push(await probe("patient"))
    }
    expect(statuses).toEqual([...Array(needed).fill("QUARANTINED"), "PAYMENT_VERIFIED"])
    await runtime.dispose()
  })
})
