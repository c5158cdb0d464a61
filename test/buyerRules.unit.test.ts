import { Database } from "bun:sqlite"
import { describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DEFAULT_MAX_AMOUNT_PER_PAYMENT } from "@x402/core/client"
import { Effect, Either, Layer, TestClock, TestContext } from "effect"
import { effectivePolicy } from "../src/client/Buyer.js"
import { candidateRefusal, challengeRefusal, priceCeiling } from "../src/client/candidate.js"
import { placeInput, toolArguments } from "../src/client/input.js"
import { judgeFailure, judgePaid } from "../src/client/outcome.js"
import { SpendLedger } from "../src/client/SpendLedger.js"
import { DEFAULT_MAX_USD_PER_PAYMENT } from "../src/client/spendControls.js"
import { fitsWindow, windowStart } from "../src/client/spendWindow.js"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { emptyMetrics } from "../src/domain/metrics.js"
import type { RankedCandidate } from "../src/domain/routes.js"
import {
  NoAcceptableOption,
  PaymentOutcomeUnknown,
  PriceAboveLimit,
  SorobanRpcFailure
} from "../src/payments/errors.js"
import { paidToolAnswer } from "../src/payments/payForTool.js"
import { it } from "./support/effectTest.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const OTHER = "GCHEI4PQEKE2TOQR5BLFE4GEWFNXOSCMKG4WCM4ZQGJYOJ7DCCAZGWTB"
const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }

const candidate = (
  option: Partial<RankedCandidate["option"]> = {},
  more: Partial<RankedCandidate> = {}
): RankedCandidate => ({
  rank: 1,
  resourceId: ResourceId.make("seller.data"),
  providerId: "seller",
  optionIndex: 0,
  option: {
    network: "stellar:testnet",
    scheme: "exact",
    asset: TESTNET_USDC,
    amount: "10000",
    amountUsd: 0.001,
    payTo: PAY_TO,
    ...option
  },
  worstCaseUsd: option.amountUsd ?? 0.001,
  score: 1,
  metrics: emptyMetrics(ResourceId.make("seller.data")),
  ...more
})

describe("candidate checks (the buyer's own, whatever the service routed)", () => {
  test("a candidate on this deployment within the policy is tried", () => {
    expect(candidateRefusal(candidate(), {}, deployment)).toBeNull()
    expect(
      candidateRefusal(candidate(), { maxPricePerRequestUsd: 0.001, denyProviders: ["other"] }, deployment)
    ).toBeNull()
  })

  test("another network, asset or scheme, a denied provider or a price over the cap is refused before any request", () => {
    expect(candidateRefusal(candidate({ network: "stellar:pubnet" }), {}, deployment)).toContain("stellar:pubnet")
    expect(candidateRefusal(candidate({ asset: "CSOMETHINGELSE" }), {}, deployment)).toContain("pays in CSOMETHINGELSE")
    expect(candidateRefusal(candidate({ scheme: "upto", maxAmount: "20000" }), {}, deployment)).toContain("only exact")
    expect(candidateRefusal(candidate(), { denyProviders: ["seller"] }, deployment)).toContain("denied")
    expect(candidateRefusal(candidate(), { maxPricePerRequestUsd: 0.0009 }, deployment)).toContain("over the policy")
    expect(candidateRefusal(candidate(), { assets: ["CX"] }, deployment)).toContain("not in the policy")
  })

  test("the price ceiling is the routed amount, lowered by the policy's cap (rounded down)", () => {
    expect(priceCeiling(candidate(), {}, 7)).toBe(10_000n)
    expect(priceCeiling(candidate(), { maxPricePerRequestUsd: 0.00051 }, 7)).toBe(5_100n)
    expect(priceCeiling(candidate(), { maxPricePerRequestUsd: 1 }, 7)).toBe(10_000n)
  })

  test("a challenge option must name the routed payee, asset, network and scheme", () => {
    const refuse = challengeRefusal(candidate())
    const offered = { scheme: "exact", network: "stellar:testnet", asset: TESTNET_USDC, payTo: PAY_TO }
    expect(refuse(offered)).toBeNull()
    expect(refuse({ ...offered, payTo: OTHER })).toBe(`payee ${OTHER} is not the routed payee ${PAY_TO}`)
    expect(refuse({ ...offered, asset: "CX" })).toContain("asset CX")
  })

  test("--max-usd tightens the policy's price per request and never loosens it", () => {
    expect(effectivePolicy({ maxUsd: 0.5 })).toEqual({ maxPricePerRequestUsd: 0.5 })
    expect(effectivePolicy({ maxUsd: 0.5, policy: { maxPricePerRequestUsd: 0.1 } })).toEqual({
      maxPricePerRequestUsd: 0.1
    })
    // Above upstream's default cap: --max-usd is the per-payment cap, as spendControls.maxAmountPerPayment is.
    expect(effectivePolicy({ maxUsd: 5 })).toEqual({ maxPricePerRequestUsd: 5 })
  })

  test("without --max-usd the cap is upstream spendControls' default, read from @x402/core", () => {
    expect(DEFAULT_MAX_AMOUNT_PER_PAYMENT).toBe("$1")
    expect(DEFAULT_MAX_USD_PER_PAYMENT).toBe(1)
    expect(effectivePolicy({ policy: { minConfidence: 0.5 } })).toEqual({
      minConfidence: 0.5,
      maxPricePerRequestUsd: 1
    })
    expect(effectivePolicy({ policy: { maxPricePerRequestUsd: 0.2 } })).toEqual({ maxPricePerRequestUsd: 0.2 })
    expect(effectivePolicy({ policy: { maxPricePerRequestUsd: 3 } })).toEqual({ maxPricePerRequestUsd: 1 })
    // The cap reaches the signer: a $2 candidate is refused before anything is signed, as upstream refuses it.
    const pricey = candidate({ amount: "20000000", amountUsd: 2 })
    expect(candidateRefusal(pricey, effectivePolicy({}), deployment)).toContain("over the policy's 1 USD")
    expect(priceCeiling(pricey, effectivePolicy({}), 7)).toBe(10_000_000n)
  })
})

describe("input placement follows the resource's method", () => {
  test("POST, PUT and PATCH carry the input as the JSON body ({} without input)", () => {
    expect(placeInput("https://a.example/x", "POST", { q: [1, { b: 2 }] })).toEqual(
      Either.right({ url: "https://a.example/x", body: '{"q":[1,{"b":2}]}' })
    )
    expect(placeInput("https://a.example/x", "PATCH", undefined)).toEqual(
      Either.right({ url: "https://a.example/x", body: "{}" })
    )
  })

  test("GET carries scalars and lists of scalars as query parameters, after the URL's own", () => {
    const placed = placeInput("https://a.example/x?fixed=1", "GET", {
      asset: "USDC:G",
      limit: 5,
      all: true,
      tag: ["a", "b"],
      skip: null
    })
    expect(placed).toEqual(
      Either.right({ url: "https://a.example/x?fixed=1&asset=USDC%3AG&limit=5&all=true&tag=a&tag=b" })
    )
    expect(placeInput("https://a.example/x", "GET", undefined)).toEqual(Either.right({ url: "https://a.example/x" }))
  })

  test("what a query cannot carry is refused before any request", () => {
    expect(Either.isLeft(placeInput("https://a.example/x", "GET", { nested: { a: 1 } }))).toBe(true)
    expect(Either.isLeft(placeInput("https://a.example/x", "GET", [1, 2]))).toBe(true)
    expect(Either.isLeft(placeInput("https://a.example/x", "DELETE", "text"))).toBe(true)
  })
})

describe("what an answer means for the purchase", () => {
  const settled = { success: true, transaction: "ab".repeat(32), network: "stellar:testnet" }
  const body = Buffer.from("{}")

  test("a 2xx with its body is delivered; the transaction only from a successful PAYMENT-RESPONSE", () => {
    expect(judgePaid({ status: 200, paymentResponse: settled, body })).toEqual({
      _tag: "Delivered",
      transactionHash: "ab".repeat(32)
    })
    expect(judgePaid({ status: 200, paymentResponse: null, body })).toEqual({
      _tag: "Delivered",
      transactionHash: null
    })
    expect(judgePaid({ status: 200, paymentResponse: { ...settled, transaction: "not-a-hash" }, body })).toEqual({
      _tag: "Delivered",
      transactionHash: null
    })
  })

  test("a failure without a successful settlement paid nothing: the next provider may be tried", () => {
    expect(judgePaid({ status: 500, paymentResponse: null, body })._tag).toBe("Unpaid")
    expect(
      judgePaid({ status: 402, paymentResponse: { ...settled, success: false, errorReason: "invalid" }, body })
    ).toEqual({
      _tag: "Unpaid",
      reason: "the paid request answered 402 without settling (invalid)"
    })
  })

  test("a settled payment without a usable answer stops the purchase", () => {
    expect(judgePaid({ status: 500, paymentResponse: settled, body })._tag).toBe("PaidFailed")
    expect(judgePaid({ status: 200, paymentResponse: settled, body: null })._tag).toBe("PaidFailed")
  })

  test("errors before an answer: an unknown outcome stops, a refused challenge and a failure go on", () => {
    const authorization = { payer: PAY_TO, nonce: "7", expirationLedger: 100 }
    expect(judgeFailure(new PaymentOutcomeUnknown({ reason: "timeout", authorization })).outcome).toBe("unknown")
    expect(judgeFailure(new PaymentOutcomeUnknown({ reason: "timeout", authorization })).reason).toContain("ledger 100")
    expect(judgeFailure(new PriceAboveLimit({ cheapest: "20000", maxPrice: "10000" })).outcome).toBe("refused")
    expect(judgeFailure(new NoAcceptableOption({ offered: "x" })).outcome).toBe("refused")
    expect(judgeFailure(new SorobanRpcFailure({ reason: "down" }))).toEqual({
      outcome: "failed",
      reason: "SorobanRpcFailure: down"
    })
  })
})

/** The buyer's spend ledger on `file`: 100 units a minute. */
const spendLedger = (file: string) => SpendLedger.layer({ file, windowSeconds: 60, limit: 100n })

describe("the local spend window", () => {
  test("rules: the window starts windowSeconds back; an amount fits when the sum stays within the limit", () => {
    expect(windowStart(10_000, 3)).toBe(7_000)
    expect(fitsWindow(5n, 5n, 10n)).toBe(true)
    expect(fitsWindow(5n, 6n, 10n)).toBe(false)
  })

  const PAYER = "GPAYER"

  it.effect(
    "reserve before signing, release when nothing left, commit at the signed amount; it rolls and survives a reopen",
    () =>
      Effect.gen(function* () {
        const file = join(mkdtempSync(join(tmpdir(), "sextant-spend-")), "nested", "buyer.key.spend.db")
        yield* Effect.gen(function* () {
          const ledger = yield* SpendLedger
          yield* TestClock.adjust("100 seconds")
          const a = yield* ledger.reserve(PAYER, 60n, "r1")
          expect((yield* Effect.flip(ledger.reserve(PAYER, 50n, "r2")))._tag).toBe("OverSpendLimit")
          // Another key has its own window.
          yield* ledger.reserve("GOTHER", 100n, "r2")
          yield* ledger.commit(a, 40n)
          const b = yield* ledger.reserve(PAYER, 60n, "r2")
          yield* ledger.release(b)
          expect(yield* ledger.spent(PAYER)).toBe(40n)
        }).pipe(Effect.provide(spendLedger(file)))
        // A new process on the same file, on its own TestClock from 0 again: the entry at 100 s is in its window.
        yield* Effect.gen(function* () {
          const ledger = yield* SpendLedger
          yield* TestClock.adjust("100 seconds")
          expect(yield* ledger.spent(PAYER)).toBe(40n)
          const over = yield* Effect.flip(ledger.reserve(PAYER, 61n, "r3"))
          expect(over).toMatchObject({ _tag: "OverSpendLimit", spent: "40", amount: "61", limit: "100" })
          // 60 s later the entry has rolled out of the window.
          yield* TestClock.adjust("60 seconds")
          expect(yield* ledger.spent(PAYER)).toBe(0n)
          yield* ledger.reserve(PAYER, 100n, "r3")
        }).pipe(Effect.provide(Layer.merge(spendLedger(file), TestContext.TestContext)))
      })
  )
})

describe("a payment resent under its payment identifier", () => {
  const PAYER = "GPAYER"
  it.effect(
    "counts once, at the amount signed, with its identifier recorded; a ledger file from before identifiers gets the column",
    () =>
      Effect.gen(function* () {
        const file = join(mkdtempSync(join(tmpdir(), "sextant-spend-")), "buyer.key.spend.db")
        // A ledger written before identifiers were recorded: the old table, one payment in it.
        const old = new Database(file, { create: true })
        old.exec(`CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, payer TEXT NOT NULL, amount TEXT NOT NULL, at_ms INTEGER NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('reserved', 'sent')), resource_id TEXT NOT NULL)`)
        old.exec(
          `INSERT INTO spends (payer, amount, at_ms, state, resource_id) VALUES ('${PAYER}', '10', 50000, 'sent', 'r0')`
        )
        old.close()
        yield* Effect.gen(function* () {
          const ledger = yield* SpendLedger
          yield* TestClock.adjust("100 seconds")
          const reservation = yield* ledger.reserve(PAYER, 60n, "r1")
          // What the buyer does for a payment its seller answered only on the second send: one commit.
          yield* ledger.commit(reservation, 40n, "sx_0123456789abcdef")
          expect(yield* ledger.spent(PAYER)).toBe(50n)
          expect(yield* ledger.identifiers(PAYER)).toEqual(["sx_0123456789abcdef"])
        }).pipe(Effect.provide(spendLedger(file)))
      })
  )

  test("an unknown outcome says whether it was resent: never without an identifier", () => {
    const authorization = { payer: "G", nonce: "1", expirationLedger: 10 } as never
    expect(judgeFailure(new PaymentOutcomeUnknown({ reason: "socket closed", authorization })).reason).toContain(
      "not resent: the seller offers no payment identifier, so a resend could pay twice"
    )
    const resent = judgeFailure(
      new PaymentOutcomeUnknown({
        reason: "socket closed; sent 3 times with payment identifier sx_x",
        authorization,
        paymentIdentifier: "sx_x"
      })
    )
    expect(resent.outcome).toBe("unknown")
    expect(resent.reason).not.toContain("not resent")
  })
})

describe("buying an MCP tool", () => {
  const TX = "ab".repeat(32)
  const settled = {
    _meta: { "x402/payment-response": { success: true, transaction: TX, network: "stellar:testnet", payer: "G" } }
  }

  test("the input is the tool's arguments: an object, or none", () => {
    expect(toolArguments(undefined)).toEqual(Either.right({}))
    expect(toolArguments({ asset: "X" })).toEqual(Either.right({ asset: "X" }))
    expect(Either.isLeft(toolArguments([1]))).toBe(true)
    expect(Either.isLeft(toolArguments("text"))).toBe(true)
  })

  test("a settled tool result is delivered; its body is the result's canonical JSON", () => {
    const answer = paidToolAnswer({ structuredContent: { b: 1, a: 2 }, content: [], ...settled }, 10_000)
    expect(answer.body?.toString("utf8")).toBe(
      `{"_meta":{"x402/payment-response":{"network":"stellar:testnet","payer":"G","success":true,"transaction":"${TX}"}},"content":[],"structuredContent":{"a":2,"b":1}}`
    )
    expect(judgePaid(answer)).toEqual({ _tag: "Delivered", transactionHash: TX })
  })

  test("an error result is not delivered: paid and failed when it settled, unpaid otherwise", () => {
    expect(judgePaid(paidToolAnswer({ isError: true, content: [], ...settled }, 10_000))._tag).toBe("PaidFailed")
    const unpaid = judgePaid(paidToolAnswer({ isError: true, content: [] }, 10_000))
    expect(unpaid).toEqual({ _tag: "Unpaid", reason: "the paid tool call answered an error without settling" })
    // A second payment request (extension binding) is no delivery either.
    expect(judgePaid(paidToolAnswer({ resultType: "payment_required", paymentRequired: {} }, 10_000))._tag).toBe(
      "Unpaid"
    )
  })

  test("a result over the body cap is not delivered", () => {
    expect(judgePaid(paidToolAnswer({ content: [{ type: "text", text: "x".repeat(100) }], ...settled }, 50))._tag).toBe(
      "PaidFailed"
    )
  })
})
