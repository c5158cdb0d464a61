import { describe, expect, test } from "bun:test"
import { Effect, Either, Layer, TestClock } from "effect"
import { AppConfig, loadConfig, TESTNET_USDC } from "../src/config.js"
import type { ResourceEvidence } from "../src/domain/evidence.js"
import { ResourceId } from "../src/domain/ids.js"
import type { AgentPolicy, PolicyEvaluateRequest } from "../src/domain/policy.js"
import type { ResourcePaymentOption } from "../src/domain/resources.js"
import { evaluatePolicy, policyContext } from "../src/policy/evaluate.js"
import { PolicyEngine } from "../src/policy/PolicyEngine.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreTest } from "../src/store/Store.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { evidence, option, payee, record, uptoOption } from "./fixtures/evidence.js"
import { layer } from "./support/effectTest.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const now = new Date("2025-06-01T12:00:00.000Z")
const context = policyContext(config, now)
const limitSeconds = config.verification.maxEvidenceAgeSeconds

const judge = (
  policy: AgentPolicy,
  opts: { option?: ResourcePaymentOption; evidence?: ResourceEvidence | undefined; providerId?: string } = {}
) =>
  evaluatePolicy({
    policy,
    providerId: opts.providerId ?? "acme",
    option: opts.option ?? option(),
    evidence: "evidence" in opts ? opts.evidence : evidence("acme.r", now),
    context
  })

const codes = (verdict: ReturnType<typeof judge>) => verdict.reasons.map((r) => r.code)

describe("evaluatePolicy: one table row per code", () => {
  const cases: ReadonlyArray<{
    name: string
    policy: AgentPolicy
    option?: ResourcePaymentOption
    evidence?: ResourceEvidence | undefined
    decision: string
    code: string
    message: string
  }> = [
    {
      name: "exact price above the cap",
      policy: { maxPricePerRequestUsd: 0.002 },
      option: option({ amount: "30000", amountUsd: 0.003 }),
      decision: "DENY",
      code: "PRICE_EXCEEDS_LIMIT",
      message: "worst-case spend 0.003 USD exceeds the limit 0.002 USD"
    },
    {
      name: "upto whose amount is under the cap but whose ceiling is over it",
      policy: { maxPricePerRequestUsd: 0.002 },
      option: uptoOption(0.001, 0.005),
      decision: "DENY",
      code: "PRICE_EXCEEDS_LIMIT",
      message: "worst-case spend (the upto ceiling) 0.005 USD exceeds the limit 0.002 USD"
    },
    {
      name: "network outside the policy",
      policy: { networks: ["stellar:testnet"] },
      option: option({ network: "stellar:pubnet" }),
      decision: "DENY",
      code: "NETWORK_NOT_ALLOWED",
      message: "network stellar:pubnet is not among the allowed networks: stellar:testnet"
    },
    {
      name: "asset outside the policy",
      policy: { assets: ["EURC"] },
      decision: "DENY",
      code: "ASSET_NOT_ALLOWED",
      message: `asset USDC (${TESTNET_USDC}) is not among the allowed assets: EURC`
    },
    {
      name: "scheme outside the policy",
      policy: { schemes: ["exact"] },
      option: uptoOption(0.001, 0.001),
      decision: "DENY",
      code: "SCHEME_NOT_ALLOWED",
      message: "scheme upto is not among the allowed schemes: exact"
    },
    {
      name: "provider in denyProviders",
      policy: { denyProviders: ["acme"] },
      decision: "DENY",
      code: "PROVIDER_DENIED",
      message: 'provider "acme" is in the policy\'s denyProviders'
    },
    {
      name: "payee account in denyProviders",
      policy: { denyProviders: [payee(1)] },
      decision: "DENY",
      code: "PROVIDER_DENIED",
      message: `payee ${payee(1)} is in the policy's denyProviders`
    },
    {
      name: "reliability under the minimum",
      policy: { minProviderReliability: 0.9 },
      evidence: evidence("acme.r", now, { metrics: { reliability: 0.72 } }),
      decision: "DENY",
      code: "RELIABILITY_LIMIT",
      message: "reliability 0.72 is below the minimum 0.9"
    },
    {
      name: "confidence under the minimum",
      policy: { minConfidence: 0.5 },
      evidence: evidence("acme.r", now, { metrics: { confidence: 0.25 } }),
      decision: "DENY",
      code: "CONFIDENCE_LIMIT",
      message: "confidence 0.25 is below the minimum 0.5"
    },
    {
      name: "no evidence at all",
      policy: {},
      evidence: undefined,
      decision: "INSUFFICIENT_DATA",
      code: "NO_VERIFICATION_EVIDENCE",
      message: "no probe evidence exists for this resource"
    },
    {
      name: "a resource the reader knows but never probed",
      policy: { minProviderReliability: 0.5, minConfidence: 0.5 },
      evidence: evidence("acme.r", now, {
        lastObservedAt: null,
        validChallengeSeen: false,
        metrics: { reliability: 0, confidence: 0 }
      }),
      decision: "INSUFFICIENT_DATA",
      code: "NO_VERIFICATION_EVIDENCE",
      message: "no probe evidence exists for this resource"
    },
    {
      name: "payee never showed a valid challenge",
      policy: {},
      evidence: evidence("acme.r", now, { status: "LIVE", validChallengeSeen: false }),
      decision: "DENY",
      code: "PAYEE_NOT_VERIFIED",
      message: `no valid x402 payment interface was ever observed at the resource paying ${payee(1)}`
    },
    {
      name: "evidence older than the configured limit",
      policy: {},
      evidence: evidence("acme.r", now, { ageSeconds: limitSeconds + 1 }),
      decision: "INSUFFICIENT_DATA",
      code: "VERIFICATION_TOO_OLD",
      message: `the newest evidence is ${limitSeconds + 1} s old (${new Date(now.getTime() - (limitSeconds + 1) * 1000).toISOString()}), over the limit of ${limitSeconds} s`
    },
    {
      name: "evidence older than the limit the policy tightened",
      policy: { maxVerificationAgeSeconds: 300 },
      evidence: evidence("acme.r", now, { ageSeconds: 301 }),
      decision: "INSUFFICIENT_DATA",
      code: "VERIFICATION_TOO_OLD",
      message: `the newest evidence is 301 s old (${new Date(now.getTime() - 301_000).toISOString()}), over the limit of 300 s`
    },
    {
      name: "no verified transaction while the policy requires one",
      policy: { requireTransactionVerified: true },
      decision: "DENY",
      code: "TRANSACTION_NOT_VERIFIED",
      message: "the policy requires a verified transaction and no settlement to this resource has been verified"
    },
    {
      name: "an offline service",
      policy: {},
      evidence: evidence("acme.r", now, { status: "OFFLINE" }),
      decision: "DENY",
      code: "SERVICE_OFFLINE",
      message: "the service is OFFLINE: its latest probes failed to connect or timed out"
    },
    {
      name: "a quarantined service",
      policy: {},
      evidence: evidence("acme.r", now, { status: "QUARANTINED" }),
      decision: "DENY",
      code: "QUARANTINED",
      message: "the resource is QUARANTINED: its challenge contradicted the catalog or an operator withdrew it"
    }
  ]
  for (const c of cases) {
    test(`${c.name} -> ${c.decision} ${c.code}`, () => {
      const verdict = judge(c.policy, {
        ...(c.option ? { option: c.option } : {}),
        ...("evidence" in c ? { evidence: c.evidence } : {})
      })
      expect(verdict).toEqual({
        decision: c.decision as never,
        reasons: [{ code: c.code as never, message: c.message }]
      })
    })
  }
})

describe("evaluatePolicy: limits and precedence", () => {
  test("an empty policy on fresh, healthy evidence allows", () => {
    expect(judge({})).toEqual({ decision: "ALLOW", reasons: [] })
  })

  test("prices exactly at the cap and upto ceilings at the cap are allowed", () => {
    expect(judge({ maxPricePerRequestUsd: 0.001 }).decision).toBe("ALLOW")
    expect(judge({ maxPricePerRequestUsd: 0.005 }, { option: uptoOption(0.001, 0.005) }).decision).toBe("ALLOW")
  })

  test("a policy may name the configured asset by its symbol or its contract id", () => {
    expect(judge({ assets: ["USDC"] }).decision).toBe("ALLOW")
    expect(judge({ assets: [TESTNET_USDC] }).decision).toBe("ALLOW")
  })

  test("a policy cannot loosen the configured evidence age limit", () => {
    const stale = evidence("acme.r", now, { ageSeconds: limitSeconds + 10 })
    expect(codes(judge({ maxVerificationAgeSeconds: limitSeconds * 10 }, { evidence: stale }))).toEqual([
      "VERIFICATION_TOO_OLD"
    ])
    expect(
      judge({ maxVerificationAgeSeconds: 600 }, { evidence: evidence("acme.r", now, { ageSeconds: 599 }) }).decision
    ).toBe("ALLOW")
  })

  test("every failing rule is listed, not only the first", () => {
    const verdict = judge(
      {
        maxPricePerRequestUsd: 0.0001,
        networks: ["stellar:pubnet"],
        assets: ["EURC"],
        schemes: ["upto"],
        denyProviders: ["acme"],
        minProviderReliability: 0.99,
        minConfidence: 0.99,
        requireTransactionVerified: true
      },
      { evidence: evidence("acme.r", now, { status: "OFFLINE", validChallengeSeen: false }) }
    )
    expect(verdict.decision).toBe("DENY")
    expect(codes(verdict)).toEqual([
      "PRICE_EXCEEDS_LIMIT",
      "NETWORK_NOT_ALLOWED",
      "ASSET_NOT_ALLOWED",
      "SCHEME_NOT_ALLOWED",
      "PROVIDER_DENIED",
      "SERVICE_OFFLINE",
      "PAYEE_NOT_VERIFIED",
      "RELIABILITY_LIMIT",
      "CONFIDENCE_LIMIT",
      "TRANSACTION_NOT_VERIFIED"
    ])
  })

  test("a policy mismatch wins over missing evidence: DENY, with both reasons listed", () => {
    const verdict = judge({ maxPricePerRequestUsd: 0.0005 }, { evidence: undefined })
    expect(verdict.decision).toBe("DENY")
    expect(codes(verdict)).toEqual(["PRICE_EXCEEDS_LIMIT", "NO_VERIFICATION_EVIDENCE"])
  })

  test("stale evidence is not measured: INSUFFICIENT_DATA rather than a DENY on old figures", () => {
    const stale = evidence("acme.r", now, {
      ageSeconds: limitSeconds + 1,
      status: "OFFLINE",
      metrics: { reliability: 0.1 }
    })
    const verdict = judge({ minProviderReliability: 0.9 }, { evidence: stale })
    expect(verdict.decision).toBe("INSUFFICIENT_DATA")
    expect(codes(verdict)).toEqual(["VERIFICATION_TOO_OLD"])
  })

  test("a quarantine stands on evidence of any age, and without probes", () => {
    const stale = evidence("acme.r", now, { ageSeconds: limitSeconds * 3, status: "QUARANTINED" })
    expect(judge({}, { evidence: stale })).toMatchObject({ decision: "DENY" })
    expect(codes(judge({}, { evidence: stale }))).toEqual(["QUARANTINED", "VERIFICATION_TOO_OLD"])
    const operator = evidence("acme.r", now, { status: "QUARANTINED", lastObservedAt: null })
    expect(codes(judge({}, { evidence: operator }))).toEqual(["QUARANTINED", "NO_VERIFICATION_EVIDENCE"])
    expect(judge({}, { evidence: operator }).decision).toBe("DENY")
  })

  test("an unreadable evidence time counts as too old", () => {
    const verdict = judge({}, { evidence: evidence("acme.r", now, { lastObservedAt: "not a date" }) })
    expect(verdict.decision).toBe("INSUFFICIENT_DATA")
    expect(codes(verdict)).toEqual(["VERIFICATION_TOO_OLD"])
  })
})

const catalog = [
  record("acme.multi", [
    option({ network: "stellar:pubnet" }),
    uptoOption(0.001, 0.01),
    option({ amountUsd: 0.002, amount: "20000" })
  ]),
  record("acme.none", []),
  record("acme.unprobed")
]
const engineLayer = PolicyEngine.Live.pipe(
  Layer.provideMerge(StoreTest),
  Layer.provide(EvidenceReader.Test(catalog, [evidence("acme.multi", now)])),
  Layer.provide(Layer.succeed(AppConfig, config))
)
const seededLayer = Layer.effectDiscard(Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(catalog))).pipe(
  Layer.provideMerge(engineLayer)
)
/** The engine's answer at `now` on the test's clock. */
const evaluate = (request: PolicyEvaluateRequest) =>
  Effect.zipRight(
    TestClock.setTime(now.getTime()),
    Effect.either(Effect.flatMap(PolicyEngine, (engine) => engine.evaluate(request)))
  )

layer(seededLayer)("PolicyEngine over the catalog store", (it) => {
  it.effect("an explicit option is judged on its own, with the evaluation time from the clock", () =>
    Effect.gen(function* () {
      const result = yield* evaluate({
        policy: { networks: ["stellar:testnet"] },
        resourceId: ResourceId.make("acme.multi"),
        optionIndex: 0
      })
      expect(Either.getOrThrow(result)).toEqual<unknown>({
        decision: "DENY",
        reasons: [
          {
            code: "NETWORK_NOT_ALLOWED",
            message: "network stellar:pubnet is not among the allowed networks: stellar:testnet"
          }
        ],
        resourceId: "acme.multi",
        optionIndex: 0,
        evaluatedAt: now.toISOString()
      })
    })
  )

  it.effect("without an option index the first allowed option answers", () =>
    Effect.gen(function* () {
      const result = yield* evaluate({
        policy: { networks: ["stellar:testnet"], maxPricePerRequestUsd: 0.005 },
        resourceId: ResourceId.make("acme.multi")
      })
      expect(Either.getOrThrow(result)).toMatchObject({ decision: "ALLOW", optionIndex: 2, reasons: [] })
    })
  )

  it.effect("a catalog resource without probes is INSUFFICIENT_DATA", () =>
    Effect.gen(function* () {
      const result = yield* evaluate({ policy: {}, resourceId: ResourceId.make("acme.unprobed") })
      expect(Either.getOrThrow(result)).toMatchObject({
        decision: "INSUFFICIENT_DATA",
        reasons: [{ code: "NO_VERIFICATION_EVIDENCE" }]
      })
    })
  )

  it.effect(
    "an unknown resource is NotFound, an option out of range InvalidRequest, a resource without options DENY NO_PAYMENT_OPTION",
    () =>
      Effect.gen(function* () {
        const missing = yield* evaluate({ policy: {}, resourceId: ResourceId.make("nope") })
        expect(Either.flip(missing).pipe(Either.getOrThrow)).toMatchObject({
          error: "NOT_FOUND",
          message: 'no resource with id "nope"'
        })
        const outOfRange = yield* evaluate({ policy: {}, resourceId: ResourceId.make("acme.multi"), optionIndex: 3 })
        expect(Either.flip(outOfRange).pipe(Either.getOrThrow)).toMatchObject({
          error: "INVALID_REQUEST",
          message: 'optionIndex 3 is out of range: resource "acme.multi" has 3 payment option(s), indexes 0 to 2'
        })
        const none = yield* evaluate({ policy: {}, resourceId: ResourceId.make("acme.none") })
        expect(Either.getOrThrow(none)).toMatchObject({
          decision: "DENY",
          reasons: [{ code: "NO_PAYMENT_OPTION" }],
          resourceId: "acme.none",
          optionIndex: null
        })
      })
  )
})
