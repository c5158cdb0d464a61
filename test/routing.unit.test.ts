import { describe, expect, test } from "bun:test"
import { Effect, Either, Layer, Schema, TestClock } from "effect"
import { AppConfig, loadConfig } from "../src/config.js"
import type { ResourceEvidence } from "../src/domain/evidence.js"
import type { ResourceRecord } from "../src/domain/resources.js"
import { RouteDecision, type RouteRequest } from "../src/domain/routes.js"
import { policyContext } from "../src/policy/evaluate.js"
import { Router } from "../src/routing/Router.js"
import { BALANCED_WEIGHTS, decideRoute } from "../src/routing/rank.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreTest } from "../src/store/Store.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { evidence, option, record, uptoOption } from "./fixtures/evidence.js"
import { layer } from "./support/effectTest.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const now = new Date("2025-06-01T12:00:00.000Z")

const route = (
  request: Partial<RouteRequest>,
  catalog: ReadonlyArray<ResourceRecord>,
  evidenceList: ReadonlyArray<ResourceEvidence> = catalog.map((r) => evidence(r.resource.id, now))
) =>
  decideRoute({
    request: { capability: "rwa.inspect", ...request },
    catalog,
    evidence: new Map(evidenceList.map((e) => [e.resourceId, e])),
    context: policyContext(config, now),
    metricsSnapshotAt: now.toISOString()
  })

const order = (decision: ReturnType<typeof route>) =>
  [decision.selected, ...decision.fallbacks].flatMap((c) => (c ? [`${c.resourceId}#${c.optionIndex}`] : []))

const priced = (usd: number) => option({ amountUsd: usd, amount: String(Math.round(usd * 1e7)) })

describe("ranking by optimizeFor", () => {
  test("cheapest compares worst-case spend, so an upto ceiling counts, not its amount", () => {
    const decision = route({ optimizeFor: "cheapest" }, [
      record("a.fixed", [priced(0.002)]),
      record("b.upto", [uptoOption(0.0005, 0.004)]),
      record("c.fixed", [priced(0.001)])
    ])
    expect(order(decision)).toEqual(["c.fixed#0", "a.fixed#0", "b.upto#0"])
    expect([decision.selected, ...decision.fallbacks].map((c) => [c?.worstCaseUsd, c?.score])).toEqual([
      [0.001, 1],
      [0.002, 0.5],
      [0.004, 0.25]
    ])
    expect(decision.selected?.rank).toBe(1)
    expect(decision.fallbacks.map((c) => c.rank)).toEqual([2, 3])
  })

  test("fastest orders by p95 latency with unknown latency last", () => {
    const catalog = [record("a.slow"), record("b.unknown"), record("c.fast")]
    const decision = route({ optimizeFor: "fastest" }, catalog, [
      evidence("a.slow", now, { metrics: { p95LatencyMs: 400 } }),
      evidence("b.unknown", now, { metrics: { p95LatencyMs: null } }),
      evidence("c.fast", now, { metrics: { p95LatencyMs: 100 } })
    ])
    expect(order(decision)).toEqual(["c.fast#0", "a.slow#0", "b.unknown#0"])
    expect([decision.selected, ...decision.fallbacks].map((c) => c?.score)).toEqual([1, 0.25, 0])
  })

  test("reliable orders by reliability, then confidence, then resource id", () => {
    const catalog = [record("d.r"), record("c.r"), record("b.r"), record("a.r")]
    const decision = route({ optimizeFor: "reliable" }, catalog, [
      evidence("a.r", now, { metrics: { reliability: 0.9, confidence: 0.5 } }),
      evidence("b.r", now, { metrics: { reliability: 0.9, confidence: 0.7 } }),
      evidence("c.r", now, { metrics: { reliability: 0.99, confidence: 0.1 } }),
      evidence("d.r", now, { metrics: { reliability: 0.9, confidence: 0.5 } })
    ])
    expect(order(decision)).toEqual(["c.r#0", "b.r#0", "a.r#0", "d.r#0"])
  })

  test("balanced (the default) is the documented weighted score", () => {
    const catalog = [record("a.cheap-flaky", [priced(0.001)]), record("b.dear-solid", [priced(0.002)])]
    const decision = route({}, catalog, [
      evidence("a.cheap-flaky", now, { metrics: { reliability: 0.5, confidence: 0.5, p95LatencyMs: 200 } }),
      evidence("b.dear-solid", now, { metrics: { reliability: 1, confidence: 1, p95LatencyMs: 100 } })
    ])
    const w = BALANCED_WEIGHTS
    const solid = w.reliability + w.confidence + w.price * 0.5 + w.latency
    const flaky = w.reliability * 0.5 + w.confidence * 0.5 + w.price + w.latency * 0.5
    expect(decision.optimizeFor).toBe("balanced")
    expect(order(decision)).toEqual(["b.dear-solid#0", "a.cheap-flaky#0"])
    expect(decision.selected?.score).toBeCloseTo(solid, 12)
    expect(decision.fallbacks[0]?.score).toBeCloseTo(flaky, 12)
  })

  test("a resource is ranked once, by its best allowed option; ties break by id then option index", () => {
    const decision = route({ optimizeFor: "cheapest", constraints: { networks: ["stellar:testnet"] } }, [
      record("b.multi", [
        option({ network: "stellar:pubnet", amountUsd: 0, amount: "0" }),
        priced(0.003),
        priced(0.001),
        priced(0.001)
      ]),
      record("a.single", [priced(0.001)])
    ])
    expect(order(decision)).toEqual(["a.single#0", "b.multi#2"])
    expect(decision.rejected).toEqual([])
  })

  test("the answer names the policy and the time of the metrics it used", () => {
    const constraints = { maxPricePerRequestUsd: 0.01 }
    const decision = route({ constraints }, [record("a.r")])
    expect(decision).toMatchObject({
      capability: "rwa.inspect",
      policy: constraints,
      metricsSnapshotAt: now.toISOString(),
      decidedAt: now.toISOString()
    })
    expect(decision.selected?.metrics).toEqual(evidence("a.r", now).metrics)
  })
})

describe("rejections", () => {
  test("every rejected candidate carries all its codes; a multi-option resource says which option failed", () => {
    const decision = route(
      { constraints: { maxPricePerRequestUsd: 0.002, schemes: ["exact"], minProviderReliability: 0.9 } },
      [
        record("a.upto", [uptoOption(0.001, 0.005)]),
        record("b.two", [uptoOption(0.001, 0.001), priced(0.003)]),
        record("c.flaky"),
        record("d.unprobed"),
        record("e.none", []),
        record("f.ok")
      ],
      [
        evidence("a.upto", now),
        evidence("b.two", now, { metrics: { reliability: 0.5 } }),
        evidence("c.flaky", now, { status: "OFFLINE", metrics: { reliability: 0.2 } }),
        evidence("f.ok", now)
      ]
    )
    expect(decision.selected?.resourceId).toBe<unknown>("f.ok")
    expect(decision.rejected.map((r) => [r.resourceId, r.optionIndex, r.codes])).toEqual<unknown>([
      ["a.upto", 0, ["PRICE_EXCEEDS_LIMIT", "SCHEME_NOT_ALLOWED"]],
      ["b.two", null, ["SCHEME_NOT_ALLOWED", "RELIABILITY_LIMIT", "PRICE_EXCEEDS_LIMIT"]],
      ["c.flaky", 0, ["SERVICE_OFFLINE", "RELIABILITY_LIMIT"]],
      ["d.unprobed", 0, ["INSUFFICIENT_DATA", "NO_VERIFICATION_EVIDENCE"]],
      ["e.none", null, ["NO_PAYMENT_OPTION"]]
    ])
    expect(decision.rejected.map((r) => r.decision)).toEqual(["DENY", "DENY", "DENY", "INSUFFICIENT_DATA", "DENY"])
    expect(decision.rejected[0]?.reasons[0]?.message).toBe(
      "worst-case spend (the upto ceiling) 0.005 USD exceeds the limit 0.002 USD"
    )
    expect(decision.rejected[1]?.reasons.map((r) => r.message)).toEqual([
      "option 0: scheme upto is not among the allowed schemes: exact",
      "reliability 0.5 is below the minimum 0.9",
      "option 1: worst-case spend 0.003 USD exceeds the limit 0.002 USD"
    ])
    expect(decision.message).toBe(
      "selected f.ok option 0 (score 0.94) from 6 candidate(s): 0 fallback(s), 5 rejected (1 for lack of current evidence: INSUFFICIENT_DATA)"
    )
  })

  test("candidates with no evidence, or only stale evidence, are INSUFFICIENT_DATA, and the message says nothing could be judged", () => {
    const decision = route(
      {},
      [record("a.never"), record("b.stale")],
      [evidence("b.stale", now, { ageSeconds: 90_000 })]
    )
    expect(decision.selected).toBeNull()
    expect(decision.rejected.map((r) => [r.resourceId, r.decision, r.codes])).toEqual<unknown>([
      ["a.never", "INSUFFICIENT_DATA", ["INSUFFICIENT_DATA", "NO_VERIFICATION_EVIDENCE"]],
      ["b.stale", "INSUFFICIENT_DATA", ["INSUFFICIENT_DATA", "VERIFICATION_TOO_OLD"]]
    ])
    expect(decision.message).toBe(
      'no provider of "rwa.inspect" could be judged: none of the 2 candidate(s) has current evidence (INSUFFICIENT_DATA); they may qualify once probed'
    )
  })

  test("a candidate denied by policy is DENY even without evidence: more evidence cannot change a price", () => {
    const decision = route({ constraints: { maxPricePerRequestUsd: 0.0001 } }, [record("a.never")])
    expect(decision.rejected[0]).toMatchObject({ decision: "DENY", codes: ["PRICE_EXCEEDS_LIMIT"] })
  })

  test("nothing surviving gives a null selection and says why", () => {
    const decision = route({ constraints: { networks: ["stellar:pubnet"] } }, [record("a.r"), record("b.r")])
    expect(decision.selected).toBeNull()
    expect(decision.fallbacks).toEqual([])
    expect(decision.rejected.map((r) => r.codes)).toEqual([["NETWORK_NOT_ALLOWED"], ["NETWORK_NOT_ALLOWED"]])
    expect(decision.message).toBe('no provider of "rwa.inspect" satisfies the policy: all 2 candidate(s) were rejected')
  })

  test("resources without the capability are not candidates", () => {
    const decision = route({ capability: "rwa.changes" }, [record("a.r"), record("b.r")])
    expect(decision).toMatchObject({ selected: null, fallbacks: [], rejected: [] })
    expect(decision.message).toBe('no resource in the catalog offers capability "rwa.changes"')
  })
})

const catalog = [
  record("stellar-intel.inspect", [priced(0.001)]),
  record("atlas.inspect", [priced(0.0005)]),
  record("meridian.inspect", [uptoOption(0.0001, 0.02)]),
  record("other.changes", [priced(0.0001)], { capabilities: ["rwa.changes"] })
]
const routerLayer = Router.Live.pipe(
  Layer.provideMerge(StoreTest),
  Layer.provide(
    EvidenceReader.Test(
      catalog,
      catalog.filter((r) => r.resource.id !== "atlas.inspect").map((r) => evidence(r.resource.id, now))
    )
  ),
  Layer.provide(Layer.succeed(AppConfig, config))
)
const seededLayer = Layer.effectDiscard(Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(catalog))).pipe(
  Layer.provideMerge(routerLayer)
)
layer(seededLayer)("Router over the catalog store and the evidence reader", (it) => {
  it.effect("candidates come from the store by capability, evidence from the reader", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(now.getTime())
      const router = yield* Router
      const decision = yield* router.route({
        capability: "rwa.inspect",
        optimizeFor: "cheapest",
        constraints: { maxPricePerRequestUsd: 0.01 }
      })
      expect(decision.selected).toMatchObject({
        resourceId: "stellar-intel.inspect",
        optionIndex: 0,
        worstCaseUsd: 0.001
      })
      expect(decision.fallbacks).toEqual([])
      expect(decision.rejected.map((r) => [r.resourceId, r.codes])).toEqual<unknown>([
        ["atlas.inspect", ["INSUFFICIENT_DATA", "NO_VERIFICATION_EVIDENCE"]],
        ["meridian.inspect", ["PRICE_EXCEEDS_LIMIT"]]
      ])
      expect(decision.metricsSnapshotAt).toBe(now.toISOString())
    })
  )
})

describe("a bounded answer", () => {
  const many = Array.from({ length: 30 }, (_, i) =>
    record(`r${String(i).padStart(2, "0")}.x`, [priced(i < 25 ? 0.001 : 0.5)])
  )

  test("at most `limit` fallbacks and rejections (default 20), the rest counted in omitted; the message counts all", () => {
    const capped = route({ constraints: { maxPricePerRequestUsd: 0.01 } }, many)
    expect(capped.fallbacks).toHaveLength(20)
    expect(capped.rejected).toHaveLength(5)
    expect(capped.omitted).toEqual({ fallbacks: 4, rejected: 0 })
    expect(capped.message).toContain("24 fallback(s), 5 rejected")
    const small = route({ constraints: { maxPricePerRequestUsd: 0.01 }, limit: 2 }, many)
    expect(small.fallbacks.map((f) => f.resourceId)).toEqual(capped.fallbacks.slice(0, 2).map((f) => f.resourceId))
    expect(small.rejected.map((r) => r.resourceId)).toEqual<unknown>(["r25.x", "r26.x"])
    expect(small.omitted).toEqual({ fallbacks: 22, rejected: 3 })
    expect(route({}, many.slice(0, 3)).omitted).toBeUndefined()
  })

  test("the answer serialised as JSON is exactly its schema encoding (the handler skips the encoder)", () => {
    const decision = route({ constraints: { maxPricePerRequestUsd: 0.01, networks: ["stellar:testnet"] }, limit: 3 }, [
      ...many,
      record("multi.x", [priced(0.5), uptoOption(0.0005, 0.004)])
    ])
    expect(decision.omitted).toBeDefined()
    expect(JSON.parse(JSON.stringify(decision))).toEqual(Schema.encodeSync(RouteDecision)(decision))
  })
})
