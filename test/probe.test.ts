import { afterAll, beforeAll, describe, expect } from "bun:test"
import { Effect, Either, Layer, Option } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import type { ProbeOutcome } from "../src/domain/observations.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { EconomicEventsRepo } from "../src/store/EconomicEventsRepo.js"
import { ObservationsRepo } from "../src/store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { TransitionsRepo } from "../src/store/TransitionsRepo.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { Prober } from "../src/verification/Prober.js"
import { entry, verificationConfig, verificationStack } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO, OTHER_PAY_TO, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

let fixture: X402Fixture
let other: X402Fixture
let closedPort: number

beforeAll(async () => {
  fixture = await startX402Fixture()
  other = await startX402Fixture()
  const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() })
  closedPort = probe.port!
  await probe.stop(true)
})
afterAll(async () => {
  await fixture.stop()
  await other.stop()
})

const TIMEOUT_MS = 300

/** A fresh in-memory store holding `entries`, trusting only the first fixture's origin. */
const stack = (entries: Parameters<typeof entry>[], probes = {}) =>
  // One buyer's payment is the evidence under test here (trust.level3.test.ts covers the distinct-payer threshold).
  Layer.effectDiscard(
    Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(entries.map((args) => entry(...args))))
  ).pipe(
    Layer.provideMerge(
      verificationStack(
        verificationConfig(
          { trustedOrigins: [fixture.origin], timeoutMs: TIMEOUT_MS, ...probes },
          { minDistinctPayers: 1 }
        )
      )
    )
  )

describe("probe outcomes against the fixture server", () => {
  const expected: Array<readonly [string, string, ProbeOutcome]> = [
    ["paid", "/paid", "healthy"],
    ["paid-post", "/paid/post", "healthy"],
    ["v1", "/v1", "healthy"],
    ["free", "/free", "http_status"],
    ["broken", "/broken", "http_status"],
    ["garbage", "/garbage", "malformed_challenge"],
    ["bad-schema", "/bad-schema", "malformed_challenge"],
    ["bare-402", "/bare-402", "no_challenge"],
    ["huge-v1", "/huge-v1", "no_challenge"],
    ["pubnet", "/pubnet", "no_acceptable_option"],
    ["other-asset", "/other-asset", "no_acceptable_option"],
    ["hang", "/hang", "timeout"],
    ["redirected", `/redirect?to=${encodeURIComponent("/paid")}`, "healthy"],
    ["loop", "/loop", "http_status"]
  ]
  const outcomeStack = () =>
    stack(
      [
        ...expected.map(
          ([id, path]) =>
            [id, fixture.url(path), undefined, id === "paid-post" ? "POST" : "GET"] as Parameters<typeof entry>
        ),
        ["closed", `http://127.0.0.1:${closedPort}/paid`]
      ],
      { trustedOrigins: [fixture.origin, `http://127.0.0.1:${closedPort}`] }
    )

  it.live("each route yields its own outcome code and the observation row records it", () =>
    Effect.gen(function* () {
      const results = yield* Effect.gen(function* () {
        const prober = yield* Prober
        return yield* Effect.forEach(
          [...expected.map(([id]) => id), "closed"],
          (id) => prober.probeResource(ResourceId.make(id)),
          {
            concurrency: "unbounded"
          }
        )
      })
      const outcomes = Object.fromEntries(results.map((r) => [r.resourceId, r.outcome]))
      expect(outcomes).toEqual({
        ...Object.fromEntries(expected.map(([id, , outcome]) => [id, outcome])),
        closed: "unreachable"
      })

      const byId = Object.fromEntries(results.map((r) => [r.resourceId, r]))
      expect(byId.paid?.observation).toMatchObject({
        method: "GET",
        httpStatus: 402,
        x402Version: 2,
        scheme: "exact",
        network: "stellar:testnet",
        asset: TESTNET_USDC,
        payTo: FIXTURE_PAY_TO,
        amount: "10000",
        maxAmount: null,
        priceUsd: 0.001,
        detail: null
      })
      expect(byId.paid?.observation.latencyMs).toBeGreaterThanOrEqual(0)
      expect(byId["paid-post"]?.observation.method).toBe("POST")
      expect(byId.paid?.challenge).toMatchObject({ x402Version: 2, accepts: [{ payTo: FIXTURE_PAY_TO }] })
      expect(byId.v1?.observation).toMatchObject({ x402Version: 1, amount: "10000" })
      expect(byId.free?.observation).toMatchObject({ httpStatus: 200, detail: "answered 200 instead of 402" })
      expect(byId.hang?.observation).toMatchObject({
        httpStatus: null,
        latencyMs: null,
        detail: `no answer within ${TIMEOUT_MS} ms`
      })
      expect(byId["huge-v1"]?.observation.detail).toContain("body over 65536 bytes was not read")
      expect(byId.loop?.observation.detail).toContain("stopped after 5 redirects")
      expect(byId.pubnet?.observation).toMatchObject({ network: "stellar:pubnet", priceUsd: null })
      expect(byId.garbage?.observation.detail).toContain("does not decode")
      expect(byId.closed?.observation.detail).toContain("ECONNREFUSED")

      // What was answered is what is stored, newest first.
      const stored = yield* Effect.flatMap(ObservationsRepo, (repo) => repo.page(ResourceId.make("paid"), 10, null))
      expect(stored.observations).toEqual([byId.paid!.observation])
    }).pipe(Effect.provide(outcomeStack()))
  )

  it.live("a challenge that contradicts the catalog quarantines the resource, and the transitions are stored", () =>
    Effect.gen(function* () {
      const results = yield* Effect.gen(function* () {
        const prober = yield* Prober
        return yield* Effect.forEach(["paid", "pricey", "other-payee", "other-asset"], (id) =>
          prober.probeResource(ResourceId.make(id))
        )
      })
      expect(results.map((r) => [r.resourceId, r.status, r.verificationLevel])).toEqual<unknown>([
        ["paid", "PAYMENT_VERIFIED", 2],
        ["pricey", "QUARANTINED", 2],
        ["other-payee", "QUARANTINED", 2],
        ["other-asset", "QUARANTINED", 1]
      ])
      const { transitions, records } = yield* Effect.gen(function* () {
        const repo = yield* TransitionsRepo
        const resources = yield* ResourceReadsRepo
        return {
          transitions: {
            paid: yield* repo.recent(ResourceId.make("paid"), 10),
            pricey: yield* repo.recent(ResourceId.make("pricey"), 10),
            payee: yield* repo.recent(ResourceId.make("other-payee"), 10),
            asset: yield* repo.recent(ResourceId.make("other-asset"), 10)
          },
          records: yield* resources.list()
        }
      })
      expect(transitions.paid.map((t) => [t.from, t.to, t.fromLevel, t.toLevel])).toEqual([
        ["VALIDATING", "PAYMENT_VERIFIED", 0, 2],
        ["DISCOVERED", "VALIDATING", 0, 0]
      ])
      expect(transitions.pricey[0]).toMatchObject({ from: "VALIDATING", to: "QUARANTINED" })
      expect(transitions.pricey[0]?.reason).toContain("price above the advertised 10000 base units")
      expect(transitions.payee[0]?.reason).toContain("payTo changed")
      expect(transitions.asset[0]?.reason).toContain("asset changed")
      expect(Date.parse(transitions.paid[0]!.at)).not.toBeNaN()
      // The catalog rows carry the derived status and level.
      expect(Object.fromEntries(records.map((r) => [r.resource.id, r.resource.status]))).toEqual({
        paid: "PAYMENT_VERIFIED",
        pricey: "QUARANTINED",
        "other-payee": "QUARANTINED",
        "other-asset": "QUARANTINED"
      })
    }).pipe(
      Effect.provide(
        stack([
          ["paid", fixture.url("/paid")],
          ["pricey", fixture.url("/pricey")],
          ["other-payee", fixture.url("/other-payee")],
          ["other-asset", fixture.url("/other-asset")]
        ])
      )
    )
  )

  it.live(
    "a settled payment lifts a payment-verified resource to TRANSACTION_VERIFIED only once the ledger confirms it",
    () =>
      Effect.gen(function* () {
        const evidence = yield* Effect.gen(function* () {
          const prober = yield* Prober
          const reader = yield* EvidenceReader
          const recorder = yield* EvidenceRecorder
          yield* prober.probeResource(ResourceId.make("paid"))
          yield* prober.probeResource(ResourceId.make("free"))
          const before = yield* reader.forResource(ResourceId.make("paid"))
          const at = new Date().toISOString()
          const payees = yield* reader.forPayee(FIXTURE_PAY_TO)
          const expected = { payTo: FIXTURE_PAY_TO, amount: "10000", scheme: "exact" as const }
          const transactionHash = "ab".repeat(32)
          yield* recorder.recordEconomic(
            {
              source: "settlement",
              resourceId: ResourceId.make("paid"),
              payTo: FIXTURE_PAY_TO,
              success: true,
              transactionHash,
              at,
              payer: OTHER_PAY_TO,
              expected
            },
            payees.map((p) => p.record)
          )
          const pending = yield* reader.forResource(ResourceId.make("paid"))
          const [due] = yield* (yield* EconomicEventsRepo).due(Date.now(), 10)
          yield* recorder.resolveEconomic(due!, {
            state: "confirmed",
            reason: "confirmed in ledger 7",
            ledger: 7,
            nextCheckMs: null
          })
          const after = (yield* reader.forPayee(FIXTURE_PAY_TO)).map((p) => p.evidence)
          return { before, pending, after, unknown: yield* reader.forResource(ResourceId.make("nope")) }
        })
        expect(evidence.pending).toMatchObject({ verificationLevel: 2, transactionVerified: false })
        expect(evidence.pending.metrics.transactionSuccessRate).toBe(0)
        expect(evidence.before).toMatchObject({
          status: "PAYMENT_VERIFIED",
          verificationLevel: 2,
          transactionVerified: false,
          validChallengeSeen: true
        })
        expect(evidence.before.metrics.transactionSuccessRate).toBe(0)
        expect(evidence.before.metrics.confidence).toBeGreaterThan(0)
        // Both resources pay the fixture payee; the settle named "paid", the only one it counts for (and the only one with a valid challenge).
        const after = Object.fromEntries(evidence.after.map((e) => [e.resourceId, e]))
        expect(after.paid).toMatchObject({
          status: "TRANSACTION_VERIFIED",
          verificationLevel: 3,
          transactionVerified: true
        })
        expect(after.paid?.metrics.transactionSuccessRate).toBe(1)
        expect(after.free).toMatchObject({ status: "LIVE", verificationLevel: 1 })
        expect(evidence.unknown).toMatchObject({
          status: "DISCOVERED",
          verificationLevel: 0,
          metrics: { confidence: 0 }
        })
      }).pipe(
        Effect.provide(
          stack([
            ["paid", fixture.url("/paid")],
            ["free", fixture.url("/free")]
          ])
        )
      )
  )
})

describe("outbound safety on real probes (loopback only)", () => {
  it.live("an untrusted private target is refused without being contacted, and recorded as refused", () =>
    Effect.gen(function* () {
      const before = other.hits.get("paid") ?? 0
      const result = yield* Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("paid")))
      expect(result.outcome).toBe("refused_target")
      expect(result.observation.detail).toContain("non-public")
      expect(other.hits.get("paid") ?? 0).toBe(before)
      // A refusal is not evidence: the resource stays without a level.
      expect(result.verificationLevel).toBe(0)
    }).pipe(Effect.provide(stack([["paid", other.url("/paid")]])))
  )

  it.live("a redirect to an untrusted private origin is refused at that hop", () =>
    Effect.gen(function* () {
      const before = other.hits.get("paid") ?? 0
      const result = yield* Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("hop")))
      expect(result.outcome).toBe("refused_target")
      expect(result.observation.detail).toContain(other.origin)
      expect(other.hits.get("paid") ?? 0).toBe(before)
    }).pipe(Effect.provide(stack([["hop", fixture.url(`/redirect?to=${encodeURIComponent(other.url("/paid"))}`)]])))
  )

  it.live("validating a refused URL fails with the reason and creates no resource", () =>
    Effect.gen(function* () {
      const result = yield* Effect.gen(function* () {
        const refused = yield* Effect.either((yield* Prober).probeUrl(other.url("/paid")))
        const badScheme = yield* Effect.either((yield* Prober).probeUrl("file:///etc/passwd"))
        return { refused, badScheme, rows: yield* (yield* ResourceReadsRepo).list() }
      })
      expect(Either.isLeft(result.refused) && "_tag" in result.refused.left && result.refused.left._tag).toBe(
        "OutboundTargetRefused"
      )
      expect(
        Either.isLeft(result.badScheme) &&
          result.badScheme.left._tag === "OutboundTargetRefused" &&
          result.badScheme.left.reason
      ).toContain("only http and https")
      expect(result.rows).toEqual([])
    }).pipe(Effect.provide(stack([])))
  )
})

describe("on-demand validation", () => {
  it.live(
    "an unknown URL becomes a DISCOVERED resource judged by its own challenge; a catalog URL is its resource",
    () =>
      Effect.gen(function* () {
        const out = yield* Effect.gen(function* () {
          const prober = yield* Prober
          const first = yield* prober.probeUrl(fixture.url("/paid/new"), "POST")
          const again = yield* prober.probeUrl(fixture.url("/paid/new"), "POST")
          const known = yield* prober.probeUrl(fixture.url("/paid"))
          const record = Option.getOrThrow(yield* (yield* ResourceReadsRepo).get(first.resourceId))
          const transitions = yield* (yield* TransitionsRepo).recent(first.resourceId, 10)
          return { first, again, known, record, transitions }
        })
        expect(out.first).toMatchObject({
          discovered: true,
          healthy: true,
          outcome: "healthy",
          status: "PAYMENT_VERIFIED",
          verificationLevel: 2
        })
        expect(out.first.observation.method).toBe("POST")
        expect(out.again).toMatchObject({ discovered: false, resourceId: out.first.resourceId })
        expect(out.known).toMatchObject({ discovered: false, resourceId: "paid" })
        expect(out.record.resource).toMatchObject({
          url: fixture.url("/paid/new"),
          method: "POST",
          status: "PAYMENT_VERIFIED",
          capabilities: []
        })
        expect(out.record.paymentOptions).toEqual([
          {
            network: "stellar:testnet",
            scheme: "exact",
            asset: TESTNET_USDC,
            amount: "10000",
            amountUsd: 0.001,
            payTo: FIXTURE_PAY_TO
          }
        ])
        expect(out.transitions.map((t) => [t.from, t.to])).toEqual([["DISCOVERED", "PAYMENT_VERIFIED"]])
      }).pipe(Effect.provide(stack([["paid", fixture.url("/paid")]])))
  )
})
