import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import type { PayeeEvidence, ResourceEvidence } from "../src/domain/evidence.js"
import type { PreflightPolicy } from "../src/domain/preflight.js"
import type { ResourceRecord } from "../src/domain/resources.js"
import { policyContext } from "../src/policy/evaluate.js"
import { type Judged, preflightVerdict } from "../src/preflight/verdict.js"
import { evidence, option, payee, record } from "./fixtures/evidence.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const now = new Date("2025-06-01T12:00:00.000Z")
const context = {
  ...policyContext(config, now),
  deployment: { network: config.network, assetContract: config.asset.assetContract },
  priceTolerance: 0.05
}

/** What a client about to pay `amount` base units to `payTo` holds. */
const paying = (payTo: string, amount = "10000", more: Partial<Judged> = {}): Judged => ({
  optionIndex: 0,
  scheme: "exact",
  network: "stellar:testnet",
  asset: TESTNET_USDC,
  payTo,
  amount,
  maxAmount: null,
  amountUsd: Number(amount) / 1e7,
  ...more
})

const entry = (
  id: string,
  payTo: string,
  more: Partial<Omit<ResourceEvidence, "metrics">> & { metrics?: Partial<ResourceEvidence["metrics"]> } = {},
  at?: string
): PayeeEvidence => {
  const r: ResourceRecord = record(id, [option({ payTo })])
  return {
    record: at === undefined ? r : { ...r, resource: { ...r.resource, url: at } },
    evidence: evidence(id, now, { metrics: { observedPriceUsd: 0.001 }, ...more })
  }
}

const judge = (
  option: Judged,
  atUrl: ReadonlyArray<PayeeEvidence>,
  atOrigin: ReadonlyArray<PayeeEvidence> = [],
  policy: PreflightPolicy = {}
) => preflightVerdict({ option, atUrl, atOrigin, policy, context })

const codes = (v: ReturnType<typeof judge>) => v.reasons.map((r) => `${r.severity} ${r.code}`)

describe("preflightVerdict", () => {
  test("the payee this URL's probes saw, at the advertised price, fresh and verified: ALLOW with no reason", () => {
    const v = judge(paying(payee(1)), [entry("shop.inspect", payee(1))])
    expect(v).toEqual({ verdict: "ALLOW", rating: "URL", reasons: [] })
  })

  test("a payTo this URL's probes never saw is DENY PAYEE_NOT_OBSERVED naming the payee they saw, whatever the policy", () => {
    for (const policy of [{}, { allowUnknownSellers: true }]) {
      const v = judge(paying(payee(9)), [entry("shop.inspect", payee(1))], [], policy)
      expect(v.verdict).toBe("DENY")
      expect(codes(v)).toContain("DENY PAYEE_NOT_OBSERVED")
      expect(v.reasons.find((r) => r.code === "PAYEE_NOT_OBSERVED")!.message).toContain(payee(1))
    }
  })

  test("a payee only advertised (no probe saw a valid challenge there) is not observed", () => {
    const v = judge(paying(payee(1)), [entry("shop.inspect", payee(1), { validChallengeSeen: false })])
    expect(codes(v)).toContain("DENY PAYEE_NOT_OBSERVED")
  })

  test("a payee seen at another URL of the origin only: WARN PAYEE_OBSERVED_AT_ORIGIN_ONLY, rated by the origin", () => {
    const v = judge(paying(payee(2)), [], [entry("shop.other", payee(2))])
    expect(v.rating).toBe("ORIGIN")
    expect(v.verdict).toBe("WARN")
    expect(codes(v)).toEqual(["WARN PAYEE_OBSERVED_AT_ORIGIN_ONLY", "WARN NO_VERIFICATION_EVIDENCE"])
  })

  test("an unknown URL on a known origin naming an unseen payee: DENY, or WARN UNRATED when the policy allows unknown sellers", () => {
    const origin = [entry("shop.other", payee(2))]
    expect(codes(judge(paying(payee(9)), [], origin))).toContain("DENY PAYEE_NOT_OBSERVED")
    const allowed = judge(paying(payee(9)), [], origin, { allowUnknownSellers: true })
    expect(allowed.verdict).toBe("WARN")
    expect(codes(allowed)).toContain("WARN UNRATED")
  })

  test("nothing known of the URL or its origin: UNRATED, DENY unless the policy allows unknown sellers", () => {
    const denied = judge(paying(payee(9)), [])
    expect(denied).toMatchObject({ verdict: "DENY", rating: "UNRATED" })
    expect(denied.reasons[0]).toMatchObject({ code: "PAYEE_NOT_OBSERVED", resourceId: null })
    const allowed = judge(paying(payee(9)), [], [], { allowUnknownSellers: true })
    expect(allowed).toMatchObject({ verdict: "WARN", rating: "UNRATED" })
    expect(codes(allowed)).toEqual(["WARN UNRATED", "WARN NO_VERIFICATION_EVIDENCE"])
  })

  test("a price above the advertised: WARN within the quarantine tolerance, DENY past it; above the observed: WARN", () => {
    const shop = [entry("shop.inspect", payee(1))]
    const within = judge(paying(payee(1), "10400"), shop)
    expect(codes(within)).toEqual(["WARN PRICE_ABOVE_ADVERTISED", "WARN PRICE_ABOVE_OBSERVED"])
    expect(within.verdict).toBe("WARN")
    const doubled = judge(paying(payee(1), "20000"), shop)
    expect(doubled.verdict).toBe("DENY")
    expect(codes(doubled)).toContain("DENY PRICE_ABOVE_ADVERTISED")
    expect(doubled.reasons[0]!.message).toContain("asks 20000 base units; the catalog advertises 10000")
    // At or under the advertised price nothing is said.
    expect(judge(paying(payee(1), "9000"), shop).verdict).toBe("ALLOW")
  })

  test("a quarantined URL is DENY; an operator's quarantine of another entry paying the payee too", () => {
    expect(codes(judge(paying(payee(1)), [entry("shop.inspect", payee(1), { status: "QUARANTINED" })]))).toContain(
      "DENY QUARANTINED"
    )
    const elsewhere = judge(
      paying(payee(1)),
      [entry("shop.inspect", payee(1))],
      [entry("shop.old", payee(1), { status: "QUARANTINED", operatorQuarantined: true })]
    )
    expect(elsewhere.verdict).toBe("DENY")
    expect(elsewhere.reasons).toContainEqual(expect.objectContaining({ code: "QUARANTINED", resourceId: "shop.old" }))
  })

  test("standing: DEGRADED warns, OFFLINE denies, stale evidence warns", () => {
    expect(codes(judge(paying(payee(1)), [entry("shop.inspect", payee(1), { status: "DEGRADED" })]))).toEqual([
      "WARN DEGRADED"
    ])
    expect(codes(judge(paying(payee(1)), [entry("shop.inspect", payee(1), { status: "OFFLINE" })]))).toContain(
      "DENY SERVICE_OFFLINE"
    )
    const stale = judge(paying(payee(1)), [
      {
        ...entry("shop.inspect", payee(1)),
        evidence: evidence("shop.inspect", now, { ageSeconds: context.maxEvidenceAgeSeconds + 60 })
      }
    ])
    expect(stale.verdict).toBe("WARN")
    expect(codes(stale)).toEqual(["WARN VERIFICATION_TOO_OLD"])
  })

  test("the buyer's policy limits, as policy evaluation judges them: price cap, reliability, denied providers", () => {
    const shop = [entry("shop.inspect", payee(1), { metrics: { reliability: 0.5, observedPriceUsd: 0.001 } })]
    const v = judge(paying(payee(1)), shop, [], {
      maxPricePerRequestUsd: 0.0005,
      minProviderReliability: 0.9,
      denyProviders: ["shop"]
    })
    expect(v.verdict).toBe("DENY")
    expect(codes(v)).toEqual(["DENY PRICE_EXCEEDS_LIMIT", "DENY PROVIDER_DENIED", "DENY RELIABILITY_LIMIT"])
  })

  test("another network or asset than the deployment rates: DENY UNSUPPORTED_PAYMENT", () => {
    const v = judge(paying(payee(1), "10000", { asset: "CABC", amountUsd: null }), [entry("shop.inspect", payee(1))])
    expect(codes(v)).toContain("DENY UNSUPPORTED_PAYMENT")
  })
})
