import { afterEach, describe, expect, test } from "bun:test"
import { Duration, Effect, Either, Exit, Fiber, Layer, TestClock } from "effect"
import { AppConfig, type FacilitatorBackend, loadConfig } from "../src/config.js"
import { type SettleGuard, settleMayFallThrough, settleThroughPool } from "../src/settlement/failover.js"
import { mergeSupported } from "../src/x402/capabilities.js"
import { BackendFailure } from "../src/x402/FacilitatorClient.js"
import { BREAKER_THRESHOLD, FacilitatorPool, type PoolOptions } from "../src/x402/FacilitatorPool.js"
import { type FixtureFacilitator, startFacilitator } from "./fixtures/facilitator.js"
import { buildExactPayment, exactRequirements } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { LOOPBACK, pollUntilEffect } from "./support/poll.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const options: PoolOptions = {
  pollInterval: Duration.seconds(30),
  requestTimeout: Duration.seconds(5),
  settleTimeout: Duration.seconds(60)
}

const fixtures: Array<FixtureFacilitator> = []
const fixture = (...args: Parameters<typeof startFacilitator>) => {
  const f = startFacilitator(...args)
  fixtures.push(f)
  return f
}
afterEach(async () => {
  await Promise.all(fixtures.splice(0).map((f) => f.stop()))
})

const poolLayer = (backends: ReadonlyArray<FacilitatorBackend>) => {
  const config = { ...Either.getOrThrow(loadConfig(undefined, {})), facilitators: backends }
  return FacilitatorPool.fromOptions(options).pipe(Layer.provide(Layer.succeed(AppConfig, config)))
}

/** `program` over a pool of `backends`; in an it.effect the poll schedule and timeouts move only when the test moves time. */
/** Two fixture facilitators as the pool's backends "a" and "b", in that order. */
const backendsAB = (a: FixtureFacilitator, b: FixtureFacilitator): ReadonlyArray<FacilitatorBackend> => [
  { id: "a", url: a.url },
  { id: "b", url: b.url }
]

const onPool = <A, E>(backends: ReadonlyArray<FacilitatorBackend>, program: Effect.Effect<A, E, FacilitatorPool>) =>
  Effect.provide(program, poolLayer(backends))

const verifyBody = (network = "stellar:testnet", scheme = "exact") =>
  Effect.promise(async () => {
    const requirements = exactRequirements({ payTo: PAY_TO, network: network as "stellar:testnet", scheme })
    const paymentPayload = await buildExactPayment(exactRequirements({ payTo: PAY_TO }))
    return { x402Version: 2, paymentPayload, paymentRequirements: requirements }
  })

describe("FacilitatorPool", () => {
  it.effect("supported is the union of healthy kinds, de-duplicated by network and scheme, in config order", () =>
    Effect.gen(function* () {
      const a = fixture()
      const b = fixture({
        kinds: [
          { x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { areFeesSponsored: true, from: "b" } },
          { x402Version: 2, scheme: "exact", network: "stellar:pubnet", extra: { areFeesSponsored: true } },
          { x402Version: 2, scheme: "exact", network: "eip155:8453" }
        ]
      })
      const { supported, status } = yield* onPool(
        [
          { id: "a", url: a.url, apiKey: "secret-key-a" },
          { id: "b", url: b.url }
        ],
        Effect.gen(function* () {
          const pool = yield* FacilitatorPool
          yield* pool.refresh
          return { supported: yield* pool.supported, status: yield* pool.status }
        })
      )
      expect(supported.kinds.map((k) => `${k.network} ${k.scheme}`)).toEqual([
        "stellar:testnet exact",
        "stellar:pubnet exact"
      ])
      expect(supported.kinds[0]?.extra).toEqual({ areFeesSponsored: true })
      expect(supported.signers).toEqual({ "stellar:*": ["GCHEI4PQEKE2TOQR5BLFE4GEWFNXOSCMKG4WCM4ZQGJYOJ7DCCAZGWTB"] })
      expect(status.map((s) => [s.id, s.healthy, s.capabilityCount, s.lastError])).toEqual([
        ["a", true, 1, null],
        ["b", true, 2, null]
      ])
      expect(status[0]?.lastCheckedAt).not.toBeNull()
      expect(JSON.stringify(status)).not.toContain("secret-key-a")
      // The key goes to its own backend only.
      expect(a.requests.every((r) => r.authorization === "Bearer secret-key-a")).toBe(true)
      expect(b.requests.every((r) => r.authorization === null)).toBe(true)
    })
  )

  it.effect("an unreachable backend is marked unhealthy on the poll schedule, skipped, and back when it answers", () =>
    Effect.gen(function* () {
      const a = fixture()
      const b = fixture()
      const body = yield* verifyBody()
      yield* onPool(
        backendsAB(a, b),
        Effect.gen(function* () {
          const pool = yield* FacilitatorPool
          // The first poll runs at once.
          yield* pollUntilEffect(
            "every backend polled healthy",
            pool.status,
            (s) => s.every((x) => x.healthy),
            LOOPBACK
          )
          yield* Effect.promise(() => a.refuse())
          yield* TestClock.adjust(Duration.seconds(30))
          const down = yield* pollUntilEffect(
            "backend a polled down",
            pool.status,
            (s) => s[0]?.healthy === false,
            LOOPBACK
          )
          expect(down[0]?.lastError).toContain("cannot connect")
          expect((yield* pool.supported).kinds).toHaveLength(1)
          expect(yield* pool.verify(body)).toMatchObject({ isValid: true })
          expect(b.calls("/verify")).toBe(1)

          a.listen()
          yield* TestClock.adjust(Duration.seconds(30))
          const up = yield* pollUntilEffect(
            "backend a polled up again",
            pool.status,
            (s) => s[0]?.healthy === true,
            LOOPBACK
          )
          expect(up[0]?.lastError).toBeNull()
          yield* pool.verify(body)
          expect(a.calls("/verify")).toBe(1)
          expect(b.calls("/verify")).toBe(1)
        })
      )
    })
  )

  it.effect(
    "verify falls through a failing backend and returns the next answer unchanged; one poisoned request leaves it healthy, a streak of failures does not",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const b = fixture()
        const body = yield* verifyBody()
        yield* onPool(
          backendsAB(a, b),
          Effect.gen(function* () {
            const pool = yield* FacilitatorPool
            yield* pool.refresh
            // 502 on verify only: /supported still answers, so no poll in between marks a down.
            a.setMode("fail502")
            const answer = yield* pool.verify(body)
            expect(answer).toEqual({ isValid: true, payer: expect.stringMatching(/^G[A-Z2-7]{55}$/) })
            expect([a.calls("/verify"), b.calls("/verify")]).toEqual([1, 1])
            // One request's failure takes nobody else's backend out: the next well-formed verify reaches a again.
            expect((yield* pool.status)[0]).toMatchObject({ healthy: true })
            a.setMode("succeed")
            yield* pool.verify(body)
            expect(a.calls("/verify")).toBe(2)
            // Failures of BREAKER_THRESHOLD requests in a row, with no success between, do.
            a.setMode("fail500")
            for (let i = 0; i < BREAKER_THRESHOLD; i++) yield* pool.verify(body)
            expect((yield* pool.status)[0]).toMatchObject({
              healthy: false,
              lastError: expect.stringContaining("answered 500")
            })
          })
        )
      })
  )

  it.effect("a backend's isValid:false is its answer: returned as is, no other backend asked", () =>
    Effect.gen(function* () {
      const a = fixture({ mode: "invalid" })
      const b = fixture()
      const body = yield* verifyBody()
      const answer = yield* onPool(
        backendsAB(a, b),
        Effect.flatMap(FacilitatorPool, (pool) => Effect.zipRight(pool.refresh, pool.verify(body)))
      )
      expect(answer).toMatchObject({ isValid: false, invalidReason: "invalid_exact_stellar_payload_wrong_amount" })
      expect(b.calls("/verify")).toBe(0)
    })
  )

  it.effect("422 when no backend supports the kind, 502 naming every backend when all eligible fail", () =>
    Effect.gen(function* () {
      const a = fixture()
      const b = fixture()
      const pubnet = yield* verifyBody("stellar:pubnet")
      const testnet = yield* verifyBody()
      const exits = yield* onPool(
        backendsAB(a, b),
        Effect.gen(function* () {
          const pool = yield* FacilitatorPool
          yield* pool.refresh
          const unsupported = yield* Effect.exit(pool.verify(pubnet))
          a.setMode("fail500")
          b.setMode("fail500")
          const allFailed = yield* Effect.exit(pool.verify(testnet))
          return { unsupported, allFailed }
        })
      )
      expect(exits.unsupported).toEqual(Exit.fail(expect.objectContaining({ error: "UNSUPPORTED_PAYMENT_KIND" })))
      const failure = Exit.isFailure(exits.allFailed) ? JSON.stringify(exits.allFailed.cause) : ""
      expect(failure).toContain("ALL_FACILITATORS_FAILED")
      expect(failure).toContain("a: answered 500")
      expect(failure).toContain("b: answered 500")
    })
  )

  const testnetExact = { network: "stellar:testnet", scheme: "exact" }
  /** A guard whose ledger cannot tell: the failover must stop where a backend went silent, as before failover existed. */
  const unreadLedger: SettleGuard = {
    deadlineMs: Number.MAX_SAFE_INTEGER,
    ledgerReserveMs: 0,
    verdict: () => Effect.succeed({ _tag: "Unknown", reason: "the ledger is not read in this test" }),
    beforeRetry: () => Effect.succeed(null)
  }

  it.effect(
    "settle falls through an unreachable backend, but stops at one that times out: the outcome is indeterminate",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const b = fixture()
        const body = yield* verifyBody()
        yield* onPool(
          backendsAB(a, b),
          Effect.gen(function* () {
            const pool = yield* FacilitatorPool
            yield* pool.refresh
            yield* Effect.promise(() => a.refuse())
            const fellThrough = yield* settleThroughPool(pool, body, testnetExact, unreadLedger)
            expect(fellThrough).toMatchObject({ _tag: "Answered", backendId: "b", response: { success: true } })
            expect(fellThrough._tag !== "Unsupported" && fellThrough.failures.map((f) => f.kind)).toEqual([
              "Unreachable"
            ])

            a.listen()
            yield* pool.refresh
            a.setMode("hang")
            const fiber = yield* Effect.fork(settleThroughPool(pool, body, testnetExact, unreadLedger))
            yield* pollUntilEffect(
              "backend a holds the settle",
              Effect.sync(() => a.calls("/settle")),
              (n) => n === 1,
              LOOPBACK
            )
            yield* TestClock.adjust(Duration.seconds(60))
            const outcome = yield* Fiber.join(fiber)
            expect(outcome).toMatchObject({ _tag: "Indeterminate", backendId: "a" })
            expect(b.calls("/settle")).toBe(1)
          })
        )
      })
  )

  it.effect(
    "settle stops at a backend that answered an error status: a 502 may come after the payment was submitted",
    () =>
      Effect.gen(function* () {
        const a = fixture()
        const b = fixture()
        const body = yield* verifyBody()
        const outcome = yield* onPool(
          backendsAB(a, b),
          Effect.gen(function* () {
            const pool = yield* FacilitatorPool
            yield* pool.refresh
            a.setMode("fail502")
            return yield* settleThroughPool(pool, body, testnetExact, unreadLedger)
          })
        )
        expect(outcome).toMatchObject({ _tag: "Indeterminate", backendId: "a" })
        expect(outcome._tag !== "Unsupported" && outcome.failures.map((f) => f.detail)).toEqual([
          expect.stringContaining("answered 502")
        ])
        expect([a.calls("/settle"), b.calls("/settle")]).toEqual([1, 0])
      })
  )

  test("settle may fall through only when the backend could not be reached at all", () => {
    const failure = (kind: BackendFailure["kind"], status: number | null = null) =>
      new BackendFailure({ backendId: "x", kind, status, detail: "" })
    expect(settleMayFallThrough(failure("Unreachable"))).toBe(true)
    expect(settleMayFallThrough(failure("HttpStatus", 500))).toBe(false)
    expect(settleMayFallThrough(failure("HttpStatus", 502))).toBe(false)
    expect(settleMayFallThrough(failure("HttpStatus", 401))).toBe(false)
    expect(settleMayFallThrough(failure("TimedOut"))).toBe(false)
    expect(settleMayFallThrough(failure("Transport"))).toBe(false)
    expect(settleMayFallThrough(failure("Malformed", 200))).toBe(false)
  })

  test("merging merges signer lists and extensions, first advertiser's kind wins", () => {
    const merged = mergeSupported([
      {
        kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { n: 1 } }],
        extensions: ["bazaar"],
        signers: { "stellar:*": ["G1"] }
      },
      {
        kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { n: 2 } }],
        extensions: ["bazaar", "x"],
        signers: { "stellar:*": ["G2", "G1"] }
      }
    ])
    expect(merged).toEqual({
      kinds: [{ x402Version: 2, scheme: "exact", network: "stellar:testnet", extra: { n: 1 } }],
      extensions: ["bazaar", "x"],
      signers: { "stellar:*": ["G1", "G2"] }
    })
  })
})
