/**
 * Property tests run on a fixed seed, so `npm test` checks the same cases every time. Set FC_SEED
 * to an integer to run them on another seed, e.g. `FC_SEED=42 npx bun test test/routing.property.unit.test.ts`.
 * When a property fails, fast-check prints the seed (and the path of the shrunk case) it used;
 * FC_SEED=<that seed> reproduces the failure.
 */
import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import fc from "fast-check"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import type { ResourceEvidence } from "../src/domain/evidence.js"
import type { AgentPolicy } from "../src/domain/policy.js"
import type { ResourcePaymentOption, ResourceRecord, ServiceStatus } from "../src/domain/resources.js"
import type { OptimizeFor, RouteDecision } from "../src/domain/routes.js"
import type { PaymentScheme, StellarNetwork } from "../src/domain/stellar.js"
import { policyContext } from "../src/policy/evaluate.js"
import { decideRoute } from "../src/routing/rank.js"
import { evidence, option, payee, record } from "./fixtures/evidence.js"
import { fcSeed } from "./support/fcSeed.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const now = new Date("2025-06-01T12:00:00.000Z")
const OTHER_ASSET = "CDTKPWPLOURQA2SGTKTUQOWRCBZEORB4BWBOMJ3D3ZTQQSGE5F6JBQLV"
const CAPABILITY = "rwa.inspect"

const networks: ReadonlyArray<StellarNetwork> = ["stellar:testnet", "stellar:pubnet"]
const schemes: ReadonlyArray<PaymentScheme> = ["exact", "upto"]
const assets = [TESTNET_USDC, OTHER_ASSET]
const providers = ["p1", "p2", "p3"]
const payees = [payee(1), payee(2), payee(3)]
const statuses: ReadonlyArray<ServiceStatus> = [
  "LIVE",
  "PAYMENT_VERIFIED",
  "CONTINUOUSLY_VERIFIED",
  "DEGRADED",
  "OFFLINE",
  "QUARANTINED"
]
const usd = fc.integer({ min: 0, max: 60 }).map((n) => n / 10_000)
const ratio = fc.integer({ min: 0, max: 100 }).map((n) => n / 100)
/** Mostly-true flags and mostly-healthy statuses, so that plenty of candidates survive a policy. */
const usually = fc.oneof({ arbitrary: fc.constant(true), weight: 5 }, { arbitrary: fc.constant(false), weight: 1 })
const statusArb = fc.oneof(
  { arbitrary: fc.constantFrom<ServiceStatus>("PAYMENT_VERIFIED", "CONTINUOUSLY_VERIFIED"), weight: 4 },
  { arbitrary: fc.constantFrom(...statuses), weight: 1 }
)

const optionArb: fc.Arbitrary<ResourcePaymentOption> = fc
  .record({
    network: fc.constantFrom(...networks),
    scheme: fc.constantFrom(...schemes),
    asset: fc.constantFrom(...assets),
    amountUsd: usd,
    headroom: usd,
    payTo: fc.constantFrom(...payees)
  })
  .map(({ headroom, ...o }) =>
    option({
      ...o,
      amount: String(Math.round(o.amountUsd * 1e7)),
      ...(o.scheme === "upto"
        ? { maxAmountUsd: o.amountUsd + headroom, maxAmount: String(Math.round((o.amountUsd + headroom) * 1e7)) }
        : {})
    })
  )

const evidenceArb = (resourceId: string): fc.Arbitrary<ResourceEvidence | undefined> =>
  fc.option(
    fc
      .record({
        status: statusArb,
        ageSeconds: fc.oneof(
          fc.integer({ min: 0, max: 3600 }),
          fc.integer({ min: 0, max: 2 * config.verification.maxEvidenceAgeSeconds })
        ),
        probed: usually,
        validChallengeSeen: usually,
        transactionVerified: fc.boolean(),
        reliability: ratio,
        confidence: ratio,
        p95LatencyMs: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: null })
      })
      .map(({ status, ageSeconds, probed, validChallengeSeen, transactionVerified, ...metrics }) =>
        evidence(resourceId, now, {
          status,
          ageSeconds,
          validChallengeSeen,
          transactionVerified,
          metrics,
          ...(probed ? {} : { lastObservedAt: null })
        })
      ),
    { nil: undefined, freq: 6 }
  )

interface World {
  readonly catalog: ReadonlyArray<ResourceRecord>
  readonly evidence: ReadonlyMap<string, ResourceEvidence>
}

const worldArb: fc.Arbitrary<World> = fc
  .uniqueArray(fc.constantFrom(..."abcdefghijkl"), { minLength: 1, maxLength: 10 })
  .chain((letters) =>
    fc.tuple(
      ...letters.map((letter) => {
        const id = `${letter}.svc`
        return fc.record({
          record: fc
            .record({
              options: fc.array(optionArb, { maxLength: 3, size: "small" }),
              provider: fc.constantFrom(...providers),
              capabilities: fc.oneof(fc.constant([CAPABILITY]), fc.subarray([CAPABILITY, "rwa.changes"]))
            })
            .map(({ options, provider, capabilities }) => record(id, options, { provider, capabilities })),
          evidence: evidenceArb(id)
        })
      })
    )
  )
  .map((entries) => ({
    catalog: entries.map((e) => e.record),
    evidence: new Map(entries.flatMap((e) => (e.evidence ? [[e.record.resource.id, e.evidence] as const] : [])))
  }))

/** Each field left out half the time, and lenient values favoured, so policies filter some but not all. */
const sometimes = <A>(arb: fc.Arbitrary<A>) => fc.option(arb, { nil: undefined, freq: 2 })
const policyArb: fc.Arbitrary<AgentPolicy> = fc
  .record({
    networks: sometimes(fc.subarray([...networks], { minLength: 1 })),
    assets: sometimes(fc.subarray(["USDC", ...assets], { minLength: 1 })),
    schemes: sometimes(fc.subarray([...schemes], { minLength: 1 })),
    maxPricePerRequestUsd: sometimes(usd),
    minProviderReliability: sometimes(ratio.map((r) => r * 0.9)),
    minConfidence: sometimes(ratio.map((r) => r * 0.8)),
    requireTransactionVerified: sometimes(fc.boolean()),
    denyProviders: sometimes(fc.subarray([...providers, ...payees], { maxLength: 1 })),
    maxVerificationAgeSeconds: sometimes(fc.integer({ min: 1, max: 2 * config.verification.maxEvidenceAgeSeconds }))
  })
  .map((p) => Object.fromEntries(Object.entries(p).filter(([, v]) => v !== undefined)) as AgentPolicy)

const optimizeArb = fc.constantFrom<OptimizeFor>("balanced", "cheapest", "fastest", "reliable")

const decide = (world: World, policy: AgentPolicy, optimizeFor: OptimizeFor, catalog = world.catalog): RouteDecision =>
  decideRoute({
    request: { capability: CAPABILITY, constraints: policy, optimizeFor },
    catalog,
    evidence: world.evidence,
    context: policyContext(config, now),
    metricsSnapshotAt: now.toISOString()
  })

/** The constraints written out independently of the implementation: what "allowed" must mean. */
const breaks = (policy: AgentPolicy, r: ResourceRecord, o: ResourcePaymentOption, e: ResourceEvidence | undefined) => {
  const worst = o.scheme === "upto" ? (o.maxAmountUsd ?? Number.POSITIVE_INFINITY) : o.amountUsd
  const maxAge = Math.min(
    config.verification.maxEvidenceAgeSeconds,
    policy.maxVerificationAgeSeconds ?? Number.POSITIVE_INFINITY
  )
  const assetNames = o.asset === TESTNET_USDC ? [o.asset, "USDC"] : [o.asset]
  return (
    (policy.maxPricePerRequestUsd !== undefined && worst > policy.maxPricePerRequestUsd) ||
    (policy.networks !== undefined && !policy.networks.includes(o.network)) ||
    (policy.assets !== undefined && !policy.assets.some((a) => assetNames.includes(a))) ||
    (policy.schemes !== undefined && !policy.schemes.includes(o.scheme)) ||
    (policy.denyProviders ?? []).some((d) => d === r.provider.id || d === o.payTo) ||
    e === undefined ||
    e.lastObservedAt === null ||
    (now.getTime() - Date.parse(e.lastObservedAt)) / 1000 > maxAge ||
    e.status === "OFFLINE" ||
    e.status === "QUARANTINED" ||
    !e.validChallengeSeen ||
    e.metrics.reliability < (policy.minProviderReliability ?? 0) ||
    e.metrics.confidence < (policy.minConfidence ?? 0) ||
    (policy.requireTransactionVerified === true && !e.transactionVerified)
  )
}

/** A policy at least as strict as `policy` on every field. */
const tightenedArb = (policy: AgentPolicy): fc.Arbitrary<AgentPolicy> =>
  fc
    .record({
      price: fc.option(usd, { nil: undefined }),
      reliability: fc.option(ratio, { nil: undefined }),
      confidence: fc.option(ratio, { nil: undefined }),
      networks: fc.option(fc.subarray([...(policy.networks ?? networks)]), { nil: undefined }),
      assets: fc.option(fc.subarray([...(policy.assets ?? ["USDC", ...assets])]), { nil: undefined }),
      schemes: fc.option(fc.subarray([...(policy.schemes ?? schemes)]), { nil: undefined }),
      deny: fc.subarray([...providers, ...payees]),
      requireTx: fc.boolean(),
      age: fc.option(fc.integer({ min: 1, max: 2 * config.verification.maxEvidenceAgeSeconds }), { nil: undefined })
    })
    .map((t) => {
      const tighter = (a: number | undefined, b: number | undefined, pick: (x: number, y: number) => number) =>
        a === undefined ? b : b === undefined ? a : pick(a, b)
      const defined = <K extends keyof AgentPolicy>(key: K, value: AgentPolicy[K] | undefined) =>
        value === undefined ? {} : { [key]: value }
      return {
        ...defined("maxPricePerRequestUsd", tighter(policy.maxPricePerRequestUsd, t.price, Math.min)),
        ...defined("minProviderReliability", tighter(policy.minProviderReliability, t.reliability, Math.max)),
        ...defined("minConfidence", tighter(policy.minConfidence, t.confidence, Math.max)),
        ...defined("maxVerificationAgeSeconds", tighter(policy.maxVerificationAgeSeconds, t.age, Math.min)),
        ...defined("networks", t.networks ?? policy.networks),
        ...defined("assets", t.assets ?? policy.assets),
        ...defined("schemes", t.schemes ?? policy.schemes),
        denyProviders: [...new Set([...(policy.denyProviders ?? []), ...t.deny])],
        requireTransactionVerified: policy.requireTransactionVerified === true || t.requireTx
      }
    })

const ranked = (d: RouteDecision) => (d.selected ? [d.selected, ...d.fallbacks] : [])
const runs = { numRuns: 250, seed: fcSeed }

describe("routing properties over random catalogs, evidence and policies", () => {
  test("the selected option never violates a constraint, nor does any fallback", () => {
    let selections = 0
    fc.assert(
      fc.property(worldArb, policyArb, optimizeArb, (world, policy, optimizeFor) => {
        const d = decide(world, policy, optimizeFor)
        if (d.selected) selections++
        for (const c of ranked(d)) {
          const r = world.catalog.find((x) => x.resource.id === c.resourceId)!
          expect(r.paymentOptions[c.optionIndex]).toEqual(c.option)
          expect(breaks(policy, r, c.option, world.evidence.get(c.resourceId))).toBe(false)
        }
      }),
      runs
    )
    // The property means little unless random worlds often have something to select.
    expect(selections).toBeGreaterThan(runs.numRuns / 10)
  })

  test("every candidate is either ranked or rejected, exactly once; a rejected one had no allowed option", () => {
    fc.assert(
      fc.property(worldArb, policyArb, optimizeArb, (world, policy, optimizeFor) => {
        const d = decide(world, policy, optimizeFor)
        const candidates = world.catalog.filter((r) => r.resource.capabilities.includes(CAPABILITY))
        const seen = [...ranked(d).map((c) => c.resourceId), ...d.rejected.map((r) => r.resourceId)]
        expect([...seen].sort()).toEqual(candidates.map((r) => r.resource.id).sort())
        expect(ranked(d).map((c) => c.rank)).toEqual(ranked(d).map((_, i) => i + 1))
        for (const rejected of d.rejected) {
          const r = candidates.find((x) => x.resource.id === rejected.resourceId)!
          expect(rejected.codes.length).toBeGreaterThan(0)
          expect(r.paymentOptions.every((o) => breaks(policy, r, o, world.evidence.get(r.resource.id)))).toBe(true)
        }
      }),
      runs
    )
  })

  test("shuffling the catalog changes nothing", () => {
    fc.assert(
      fc.property(
        worldArb.chain((world) =>
          fc.tuple(fc.constant(world), fc.shuffledSubarray([...world.catalog], { minLength: world.catalog.length }))
        ),
        policyArb,
        optimizeArb,
        ([world, shuffled], policy, optimizeFor) => {
          expect(decide(world, policy, optimizeFor, shuffled)).toEqual(decide(world, policy, optimizeFor))
        }
      ),
      runs
    )
  })

  test("tightening a limit never selects a provider that the looser policy rejected", () => {
    fc.assert(
      fc.property(
        worldArb,
        policyArb.chain((loose) => fc.tuple(fc.constant(loose), tightenedArb(loose))),
        optimizeArb,
        (world, [loose, tight], optimizeFor) => {
          const looseDecision = decide(world, loose, optimizeFor)
          const tightDecision = decide(world, tight, optimizeFor)
          const rejectedLoosely = new Set(looseDecision.rejected.map((r) => r.resourceId))
          const rankedLoosely = new Set(ranked(looseDecision).map((c) => c.resourceId))
          for (const c of ranked(tightDecision)) {
            expect(rejectedLoosely.has(c.resourceId)).toBe(false)
            expect(rankedLoosely.has(c.resourceId)).toBe(true)
          }
        }
      ),
      runs
    )
  })
})
