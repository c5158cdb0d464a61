import { describe, expect, test } from "bun:test"
import { encodePaymentRequiredHeader } from "@x402/core/http"
import type { PaymentRequired, PaymentRequirements } from "@x402/core/types"
import { Effect, Either } from "effect"
import { loadConfig, TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import {
  checkAddresses,
  checkUrl,
  DnsFailure,
  guardTarget,
  isPublicAddress,
  OutboundTargetRefused
} from "../src/outbound/outboundGuard.js"
import { contradiction, representativeOption } from "../src/verification/catalogMatch.js"
import { confidence, currentMetrics, snapshotFrom } from "../src/verification/metrics.js"
import { validationRetryAfter } from "../src/verification/probeSlots.js"
import { deriveStanding, quarantineLifted, statusRules } from "../src/verification/status.js"
import { type ChallengeOption, classify, MAX_CHALLENGE_OPTIONS, readChallenge } from "../src/x402/challenge.js"
import { advertised, answeredWithout, observation, timedOut } from "./fixtures/observations.js"
import { FIXTURE_PAY_TO, OTHER_ASSET, OTHER_PAY_TO } from "./fixtures/x402Terms.js"
import { it } from "./support/effectTest.js"
import { percentile, summarizeWindow } from "./support/referenceWindow.js"

const config = Either.getOrThrow(loadConfig(undefined, {}))
const verification = config.verification
const rules = statusRules(config)
const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }
const closed = { allowPrivateTargets: false, trustedOrigins: [] as Array<string> }
const HOUR = 3_600_000
const noPayments = { total: 0, successes: 0 }

describe("outbound guard (pure; nothing here connects anywhere)", () => {
  test.each([
    "10.0.0.1",
    "172.16.5.4",
    "172.31.255.255",
    "192.168.1.1",
    "127.0.0.1",
    "127.255.0.9",
    "169.254.169.254",
    "168.63.129.16",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::127.0.0.1",
    "64:ff9b::a00:1",
    "2002:a00:1::1",
    "not-an-address"
  ])("%s is not public", (address) => {
    expect(isPublicAddress(address)).toBe(false)
  })

  test.each(["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"])(
    "%s is public",
    (address) => {
      expect(isPublicAddress(address)).toBe(true)
    }
  )

  test("only absolute http(s) URLs without credentials pass the shape check", () => {
    for (const raw of ["ftp://example.com/x", "file:///etc/passwd", "gopher://example.com", "not a url", "/relative"]) {
      expect(checkUrl(raw, closed)).toBeInstanceOf(OutboundTargetRefused)
    }
    const withCredentials = checkUrl("https://user:secret@example.com/", closed)
    expect(withCredentials).toBeInstanceOf(OutboundTargetRefused)
    expect((withCredentials as OutboundTargetRefused).reason).not.toContain("secret")
    expect(checkUrl("https://example.com/paid", closed)).toBeInstanceOf(URL)
  })

  test("literal private addresses are refused before any lookup, in every spelling", () => {
    for (const raw of [
      "http://10.0.0.1/",
      "http://169.254.169.254/latest/meta-data/",
      "http://[::1]:8080/",
      "http://[::ffff:127.0.0.1]/",
      "http://0x7f.1/",
      "http://2130706433/",
      "http://[fe80::1]/"
    ]) {
      const result = checkUrl(raw, closed)
      expect(result).toBeInstanceOf(OutboundTargetRefused)
      expect((result as OutboundTargetRefused).reason).toContain("non-public")
    }
  })

  test("every resolved address must be public; the operator switches and trusted origins open it", () => {
    const url = new URL("https://api.example.com/x")
    const refused = checkAddresses(url, ["93.184.216.34", "10.0.0.5"], closed)
    expect(refused?.reason).toContain("api.example.com resolves to a non-public address")
    // What an internal name resolves to is not told to whoever named it.
    expect(refused?.reason).not.toContain("10.0.0.5")
    expect(checkAddresses(url, ["93.184.216.34"], closed)).toBeNull()
    expect(checkAddresses(url, ["10.0.0.5"], { ...closed, allowPrivateTargets: true })).toBeNull()
    const trusted = { ...closed, trustedOrigins: ["http://127.0.0.1:4021"] }
    expect(
      checkAddresses(new URL("http://127.0.0.1:4021/stellar-intel/v1/rwa/inspect"), ["127.0.0.1"], trusted)
    ).toBeNull()
    expect(checkAddresses(new URL("http://127.0.0.1:4022/x"), ["127.0.0.1"], trusted)).toBeInstanceOf(
      OutboundTargetRefused
    )
  })

  it.effect("hostnames are resolved before connecting, with the resolver swapped for a table", () =>
    Effect.gen(function* () {
      const looked: Array<string> = []
      const table: Record<string, Array<string>> = {
        "internal.example": ["192.168.0.10"],
        "public.example": ["93.184.216.34"]
      }
      const resolve = (host: string) =>
        Effect.suspend(() => {
          looked.push(host)
          const found = table[host]
          return found ? Effect.succeed(found) : Effect.fail(new DnsFailure({ host, reason: "ENOTFOUND" }))
        })
      const guard = (raw: string, policy = closed) => Effect.either(guardTarget(raw, policy, resolve))
      const internal = yield* guard("https://internal.example/paid")
      expect(Either.isLeft(internal) && internal.left._tag).toBe("OutboundTargetRefused")
      expect(Either.isRight(yield* guard("https://public.example/paid"))).toBe(true)
      const missing = yield* guard("https://missing.example/")
      expect(Either.isLeft(missing) && missing.left._tag).toBe("DnsFailure")
      expect(looked).toEqual(["internal.example", "public.example", "missing.example"])
      yield* guard("http://10.1.2.3/")
      expect(looked).toHaveLength(3)
      // A private-allowed target is resolved all the same: its connection is pinned to that answer.
      expect(Either.isRight(yield* guard("https://internal.example/", { ...closed, allowPrivateTargets: true }))).toBe(
        true
      )
      expect(looked).toHaveLength(4)
    })
  )
})

const v2Challenge = (accepts: Array<Partial<PaymentRequirements>>): PaymentRequired => ({
  x402Version: 2,
  resource: { url: "https://example.com/paid" },
  accepts: accepts.map((a) => ({
    scheme: "exact",
    network: "stellar:testnet",
    amount: "10000",
    asset: TESTNET_USDC,
    payTo: FIXTURE_PAY_TO,
    maxTimeoutSeconds: 60,
    extra: {},
    ...a
  }))
})

const headers = (entries: Record<string, string>) => (name: string) =>
  Object.entries(entries).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1]

describe("challenge decoding", () => {
  test("a v2 PAYMENT-REQUIRED header with an acceptable option is healthy", () => {
    const reading = readChallenge(
      headers({ "PAYMENT-REQUIRED": encodePaymentRequiredHeader(v2Challenge([{}])) }),
      undefined
    )
    expect(reading._tag).toBe("Decoded")
    expect(classify(402, reading, deployment)).toBe("healthy")
    expect(reading._tag === "Decoded" && reading.options[0]).toMatchObject({
      x402Version: 2,
      amount: "10000",
      maxAmount: null
    })
  })

  test("a challenge is bounded like a body: a header over the cap, or too many options, is malformed and not decoded", () => {
    // 2,500 options in an 850 KB header were listed before: Bun's header limit was the only bound.
    const many = encodePaymentRequiredHeader(v2Challenge(Array.from({ length: 2500 }, () => ({}))))
    expect(many.length).toBeGreaterThan(65_536)
    const huge = readChallenge(headers({ "PAYMENT-REQUIRED": many }), undefined, 65_536)
    expect(huge).toMatchObject({ _tag: "Malformed" })
    expect(huge._tag === "Malformed" && huge.reason).toContain("65536-byte bound")
    const options = readChallenge(
      headers({
        "PAYMENT-REQUIRED": encodePaymentRequiredHeader(
          v2Challenge(Array.from({ length: MAX_CHALLENGE_OPTIONS + 1 }, () => ({})))
        )
      }),
      undefined
    )
    expect(options._tag === "Malformed" && options.reason).toContain(`${MAX_CHALLENGE_OPTIONS + 1} payment options`)
    expect(
      readChallenge(
        headers({
          "PAYMENT-REQUIRED": encodePaymentRequiredHeader(
            v2Challenge(Array.from({ length: MAX_CHALLENGE_OPTIONS }, () => ({})))
          )
        }),
        undefined
      )._tag
    ).toBe("Decoded")
  })

  test("a v1 body is read, with maxAmountRequired as the amount", () => {
    const body = {
      x402Version: 1,
      accepts: [
        {
          scheme: "exact",
          network: "stellar:testnet",
          maxAmountRequired: "20000",
          resource: "https://example.com/v1",
          description: "d",
          payTo: FIXTURE_PAY_TO,
          maxTimeoutSeconds: 60,
          asset: TESTNET_USDC
        }
      ]
    }
    const reading = readChallenge(headers({}), body)
    expect(classify(402, reading, deployment)).toBe("healthy")
    expect(reading._tag === "Decoded" && reading.options[0]?.amount).toBe("20000")
  })

  test("each failure has its own outcome", () => {
    const header = (value: string) => headers({ "PAYMENT-REQUIRED": value })
    expect(classify(200, readChallenge(headers({}), undefined), deployment)).toBe("http_status")
    expect(classify(402, readChallenge(headers({}), "Payment Required"), deployment)).toBe("no_challenge")
    expect(classify(402, readChallenge(headers({}), { message: "pay" }), deployment)).toBe("no_challenge")
    expect(classify(402, readChallenge(header("%%% not base64"), undefined), deployment)).toBe("malformed_challenge")
    expect(classify(402, readChallenge(header(btoa("{not json")), undefined), deployment)).toBe("malformed_challenge")
    const badSchema = readChallenge(header(btoa(JSON.stringify({ x402Version: 2, accepts: "nope" }))), undefined)
    expect(badSchema._tag === "Malformed" && badSchema.reason).toContain("x402 schema")
    // A body that claims x402 v2 without the header is a broken challenge, not an absent one.
    expect(classify(402, readChallenge(headers({}), { x402Version: 2, accepts: [] }), deployment)).toBe(
      "malformed_challenge"
    )
    const encode = (accepts: Array<Partial<PaymentRequirements>>) =>
      header(encodePaymentRequiredHeader(v2Challenge(accepts)))
    expect(classify(402, readChallenge(encode([{ network: "stellar:pubnet" }]), undefined), deployment)).toBe(
      "no_acceptable_option"
    )
    expect(classify(402, readChallenge(encode([{ asset: OTHER_ASSET }]), undefined), deployment)).toBe(
      "no_acceptable_option"
    )
    expect(classify(402, readChallenge(encode([{ scheme: "stream" }]), undefined), deployment)).toBe(
      "no_acceptable_option"
    )
    expect(classify(402, readChallenge(encode([{ amount: "0.001" }]), undefined), deployment)).toBe(
      "no_acceptable_option"
    )
    // The x402 schema itself requires at least one option.
    expect(classify(402, readChallenge(encode([]), undefined), deployment)).toBe("malformed_challenge")
    // One acceptable option among others is enough.
    expect(classify(402, readChallenge(encode([{ network: "stellar:pubnet" }, {}]), undefined), deployment)).toBe(
      "healthy"
    )
  })

  test("an upto option's amount is its ceiling", () => {
    const reading = readChallenge(
      headers({ "PAYMENT-REQUIRED": encodePaymentRequiredHeader(v2Challenge([{ scheme: "upto", amount: "50000" }])) }),
      undefined
    )
    expect(reading._tag === "Decoded" && reading.options[0]).toMatchObject({
      scheme: "upto",
      amount: "50000",
      maxAmount: "50000"
    })
  })
})

const offered = (overrides: Partial<ChallengeOption> = {}): ChallengeOption => ({
  x402Version: 2,
  scheme: "exact",
  network: "stellar:testnet",
  asset: TESTNET_USDC,
  payTo: FIXTURE_PAY_TO,
  amount: "10000",
  maxAmount: null,
  ...overrides
})

describe("challenge against the catalog", () => {
  test("agreement, payee change, asset change and price beyond the tolerance", () => {
    expect(contradiction([offered()], [advertised], 0.05)).toBeNull()
    expect(contradiction([offered({ payTo: OTHER_PAY_TO })], [advertised], 0.05)).toContain("payTo changed")
    expect(contradiction([offered({ asset: OTHER_ASSET })], [advertised], 0.05)).toContain("asset changed")
    expect(contradiction([offered({ amount: "10500" })], [advertised], 0.05)).toBeNull()
    expect(contradiction([offered({ amount: "10501" })], [advertised], 0.05)).toContain(
      "price above the advertised 10000"
    )
    // Cheaper is no contradiction; options of a kind the catalog does not list are not judged.
    expect(contradiction([offered({ amount: "5000" })], [advertised], 0.05)).toBeNull()
    expect(contradiction([offered({ network: "stellar:pubnet", payTo: OTHER_PAY_TO })], [advertised], 0.05)).toBeNull()
    expect(contradiction([offered({ payTo: OTHER_PAY_TO })], [], 0.05)).toBeNull()
  })

  test("upto ceilings are compared with the advertised ceiling", () => {
    const upto = { ...advertised, scheme: "upto" as const, maxAmount: "50000", maxAmountUsd: 0.005 }
    expect(contradiction([offered({ scheme: "upto", amount: "50000", maxAmount: "50000" })], [upto], 0)).toBeNull()
    expect(contradiction([offered({ scheme: "upto", amount: "60000", maxAmount: "60000" })], [upto], 0)).toContain(
      "price"
    )
  })

  test("the recorded option is the catalog's when offered, else an acceptable one", () => {
    const foreign = offered({ network: "stellar:pubnet" })
    const other = offered({ payTo: OTHER_PAY_TO })
    expect(representativeOption([foreign, other, offered()], [advertised], deployment)).toEqual(offered())
    expect(representativeOption([foreign, other], [advertised], deployment)).toEqual(other)
    expect(representativeOption([foreign], [advertised], deployment)).toEqual(foreign)
    expect(representativeOption([], [advertised], deployment)).toBeNull()
  })
})

describe("metrics (pure)", () => {
  test("nearest-rank percentiles", () => {
    expect(percentile([], 0.5)).toBeNull()
    expect(percentile([7], 0.95)).toBe(7)
    expect(percentile([10, 20, 30, 40], 0.5)).toBe(20)
    expect(
      percentile(
        Array.from({ length: 100 }, (_, i) => i + 1),
        0.95
      )
    ).toBe(95)
  })

  test("window figures follow DESIGN: answered/probes, valid/answered, their product, prices", () => {
    const t = 1_700_000_000_000
    const window = [
      observation(t, { latencyMs: 100 }),
      observation(t + 1000, { latencyMs: 300, amount: "20000", priceUsd: 0.002 }),
      answeredWithout(t + 2000, 500),
      timedOut(t + 3000),
      // The service's own refusal is not evidence about the resource.
      observation(t + 4000, { outcome: "refused_target", httpStatus: null })
    ]
    const stats = summarizeWindow(window, noPayments, [advertised])
    const m = snapshotFrom(ResourceId.make("r1"), stats, null, false)
    expect(m.observationCount).toBe(4)
    expect(m.availability24h).toBe(0.75)
    expect(m.paymentInterfaceSuccessRate).toBeCloseTo(2 / 3)
    expect(m.reliability).toBeCloseTo(0.5)
    expect(m.p50LatencyMs).toBe(100)
    expect(m.p95LatencyMs).toBe(300)
    expect(m.priceConsistency).toBe(0.5)
    expect(m.observedPriceUsd).toBe(0.002)
    expect(m.lastVerified).toBe(new Date(t + 1000).toISOString())
    expect(m.lastObservedAt).toBe(new Date(t + 3000).toISOString())
    expect(m.transactionSuccessRate).toBe(0)
  })

  test("transaction success rate comes from economic outcomes only", () => {
    const stats = summarizeWindow([observation(0)], { total: 2, successes: 1 }, [advertised])
    expect(snapshotFrom(ResourceId.make("r1"), stats, null, true).transactionSuccessRate).toBe(0.5)
    expect(
      snapshotFrom(ResourceId.make("r1"), summarizeWindow([observation(0)], noPayments, [advertised]), null, false)
        .transactionSuccessRate
    ).toBe(0)
  })

  test("confidence: 0 without evidence, grows with probes, halves per half-life, 0 outside the window", () => {
    expect(confidence(0, 0, verification)).toBe(0)
    const few = confidence(2, 0, verification)
    const many = confidence(48, 0, verification)
    expect(few).toBeGreaterThan(0)
    expect(many).toBeGreaterThan(few)
    expect(many).toBeGreaterThan(0.95)
    expect(many).toBeLessThan(1)
    const halfLife = verification.confidenceHalfLifeSeconds * 1000
    expect(confidence(48, halfLife, verification)).toBeCloseTo(many / 2, 3)
    expect(confidence(48, verification.windowHours * HOUR + 1, verification)).toBe(0)
  })

  test("a snapshot whose newest probe left the window reads as no current evidence", () => {
    const t = 1_700_000_000_000
    const snapshot = snapshotFrom(
      ResourceId.make("r1"),
      summarizeWindow([observation(t)], noPayments, [advertised]),
      null,
      false
    )
    const fresh = currentMetrics(ResourceId.make("r1"), snapshot, t + 1000, verification)
    expect(fresh.confidence).toBeGreaterThan(0)
    expect(fresh.availability24h).toBe(1)
    const stale = currentMetrics(ResourceId.make("r1"), snapshot, t + verification.windowHours * HOUR + 1, verification)
    expect(stale).toMatchObject({ confidence: 0, availability24h: 0, observationCount: 0, p50LatencyMs: null })
    expect(stale.lastVerified).toBe(new Date(t).toISOString())
    expect(currentMetrics(ResourceId.make("r2"), null, t, verification)).toMatchObject({
      resourceId: "r2",
      confidence: 0,
      lastVerified: null
    })
  })
})

describe("status machine (pure)", () => {
  const t = 1_700_000_000_000
  const standing = (window: Parameters<typeof summarizeWindow>[0], tx = false, now = t + 10_000, cfg = rules) =>
    deriveStanding(summarizeWindow(window, noPayments, [advertised]), tx, now, cfg)

  test("levels 0 to 3 from the evidence", () => {
    expect(standing([])).toMatchObject({ status: "DISCOVERED", level: 0 })
    expect(standing([timedOut(t)])).toMatchObject({ status: "VALIDATING", level: 0 })
    expect(standing([answeredWithout(t)])).toMatchObject({ status: "LIVE", level: 1 })
    expect(standing([observation(t)])).toMatchObject({ status: "PAYMENT_VERIFIED", level: 2 })
    expect(standing([observation(t)], true)).toMatchObject({ status: "TRANSACTION_VERIFIED", level: 3 })
    // A payment alone, without a valid challenge, earns nothing above what the probes show.
    expect(standing([answeredWithout(t)], true)).toMatchObject({ status: "LIVE", level: 1 })
  })

  test("level 4 needs sustained healthy probes over the window, never one probe", () => {
    const lenient = { ...rules, continuousMinProbes: 1, continuousMinAvailability: 0 }
    expect(standing([observation(t)], true, t, lenient).level).toBe(3)
    const start = t
    const hourly = Array.from({ length: 25 }, (_, i) => observation(start + i * HOUR))
    const end = start + 24 * HOUR
    expect(standing(hourly, true, end)).toMatchObject({ status: "CONTINUOUSLY_VERIFIED", level: 4 })
    expect(standing(hourly, false, end).level).toBe(2)
    // The same count squeezed into the last hours does not cover the window.
    const burst = Array.from({ length: 25 }, (_, i) => observation(end - i * 60_000))
    expect(standing(burst, true, end).level).toBe(3)
    // Evidence that stopped arriving does not keep level 4.
    expect(standing(hourly, true, end + 3 * HOUR).level).toBe(3)
  })

  test("OFFLINE after the configured run of connect failures, DEGRADED below the healthy share", () => {
    const n = verification.offlineAfterFailures
    const failures = Array.from({ length: n }, (_, i) => timedOut(t + (i + 1) * 1000))
    expect(standing([observation(t), ...failures])).toMatchObject({ status: "OFFLINE", level: 2 })
    expect(standing([observation(t), ...failures.slice(1)])).toMatchObject({ status: "DEGRADED", level: 2 })
    const mixed = [
      observation(t),
      observation(t + 1),
      observation(t + 2),
      answeredWithout(t + 3, 402),
      answeredWithout(t + 4, 402)
    ]
    const degraded = standing(mixed)
    expect(degraded).toMatchObject({ status: "DEGRADED", level: 2 })
    expect(degraded.reason).toContain("3 of 5")
    // A recovery after an outage clears OFFLINE.
    expect(standing([...failures, observation(t + 10_000)]).status).not.toBe("OFFLINE")
  })

  test("QUARANTINED by a contradicting challenge; failures after it do not hide it", () => {
    const bad = observation(t + 1000, { payTo: OTHER_PAY_TO, contradiction: "payTo changed: ..." })
    const quarantined = standing([observation(t), bad])
    expect(quarantined).toMatchObject({ status: "QUARANTINED" })
    expect(quarantined.reason).toContain("payTo changed")
    expect(standing([observation(t), bad, timedOut(t + 2000)]).status).toBe("QUARANTINED")
  })

  describe("an automatic quarantine lifts after enough agreeing challenges, spread over a probe interval", () => {
    const interval = rules.probeIntervalSeconds * 1000
    const needed = rules.quarantineReleaseChallenges
    const raised = (ms: number) =>
      observation(ms, {
        amount: "20000",
        priceUsd: 0.002,
        contradiction: "price 0.002 USD is above the advertised 0.001 USD"
      })
    /** The contradiction at t, then agreeing challenges one interval apart. */
    const honestAfter = (n: number) => [
      raised(t),
      ...Array.from({ length: n }, (_, i) => observation(t + (i + 1) * interval))
    ]
    const at = (probes: ReturnType<typeof honestAfter>) => Date.parse(probes[probes.length - 1]!.observedAt) + 1000

    test("the default is stated: three in a row", () => {
      expect(needed).toBe(3)
    })

    test("one good answer is not enough: the quarantine holds until the stated number", () => {
      for (let n = 1; n < needed; n++) {
        const probes = honestAfter(n)
        expect(standing(probes, false, at(probes))).toMatchObject({ status: "QUARANTINED", level: 2 })
      }
      const probes = honestAfter(needed)
      expect(standing(probes, false, at(probes))).toMatchObject({ status: "PAYMENT_VERIFIED", level: 2 })
    })

    test("a seller alternating its price is quarantined after every probe", () => {
      const probes = Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0 ? raised(t + i * interval) : observation(t + i * interval)
      )
      for (let n = 1; n <= probes.length; n++) {
        const seen = probes.slice(0, n)
        expect(standing(seen, false, at(seen)).status).toBe("QUARANTINED")
      }
    })

    test("a burst of agreeing challenges within one interval does not lift it; spread over one, it does", () => {
      const burst = [raised(t), ...Array.from({ length: 10 }, (_, i) => observation(t + 1000 + i * 100))]
      expect(standing(burst, false, at(burst)).status).toBe("QUARANTINED")
      const spread = [...burst, observation(t + 1000 + interval)]
      expect(standing(spread, false, at(spread)).status).toBe("PAYMENT_VERIFIED")
    })

    test("probes without a challenge neither count nor break the run; a new contradiction starts it again", () => {
      const withTimeouts = [
        raised(t),
        observation(t + interval),
        timedOut(t + interval + 1),
        observation(t + 2 * interval),
        timedOut(t + 2 * interval + 1),
        observation(t + 3 * interval)
      ]
      // Lifted: what remains is the earned status under its other conditions (3 healthy of 6 probes).
      expect(standing(withTimeouts, false, at(withTimeouts)).status).toBe("DEGRADED")
      expect(standing(withTimeouts.slice(0, -1), false, at(withTimeouts)).status).toBe("QUARANTINED")
      const relapse = [
        ...honestAfter(needed - 1),
        raised(t + needed * interval),
        observation(t + (needed + 1) * interval)
      ]
      expect(standing(relapse, false, at(relapse)).status).toBe("QUARANTINED")
    })

    test("the rule itself: count and spread both needed", () => {
      const run = { atMs: 0, reason: "x", agreeing: needed, firstAgreeingMs: 1000, lastAgreeingMs: 1000 + interval }
      expect(quarantineLifted(run, rules)).toBe(true)
      expect(quarantineLifted({ ...run, agreeing: needed - 1 }, rules)).toBe(false)
      expect(quarantineLifted({ ...run, lastAgreeingMs: 1000 + interval - 1 }, rules)).toBe(false)
      expect(
        quarantineLifted({ ...run, agreeing: needed }, { ...rules, quarantineReleaseChallenges: needed + 1 })
      ).toBe(false)
    })

    test("an operator's quarantine is not lifted by agreeing challenges", () => {
      const probes = honestAfter(needed * 2)
      const operator = { actor: "ops", reason: "held for review", at: new Date(t).toISOString() }
      expect(
        deriveStanding(summarizeWindow(probes, noPayments, [advertised]), false, at(probes), rules, operator)
      ).toMatchObject({
        status: "QUARANTINED",
        reason: "quarantined by operator ops: held for review"
      })
    })
  })
})

describe("a caller's validation of a catalog resource: recorded, or 429 beyond the allowance", () => {
  const INTERVAL = 60_000
  const NOW = 1_000_000

  test("one observation beside the schedule's per interval (the default): the second within it waits for the oldest to leave", () => {
    expect(validationRetryAfter([], NOW, INTERVAL, 1)).toBeNull()
    expect(validationRetryAfter([NOW - 10_000], NOW, INTERVAL, 1)).toBeNull()
    // Two in the interval (the schedule's and a caller's): retry when the older one is an interval old.
    expect(validationRetryAfter([NOW - 5_000, NOW - 20_000], NOW, INTERVAL, 1)).toBe(40)
    // Older than the interval: they no longer count.
    expect(validationRetryAfter([NOW - 5_000, NOW - 61_000], NOW, INTERVAL, 1)).toBeNull()
  })

  test("a larger allowance counts that many more", () => {
    expect(validationRetryAfter([NOW - 1, NOW - 2], NOW, INTERVAL, 2)).toBeNull()
    expect(validationRetryAfter([NOW - 1, NOW - 2, NOW - 59_999], NOW, INTERVAL, 2)).toBe(1)
  })
})
