import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { declarePaymentIdentifierExtension } from "@x402/extensions/payment-identifier"
import { Effect, Either } from "effect"
import { judgePaid } from "../src/client/outcome.js"
import { loadConfig } from "../src/config.js"
import { payForTool } from "../src/payments/payForTool.js"
import { PAYMENT_META } from "../src/x402/mcpAnswer.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { type McpSeller, startMcpSeller } from "./fixtures/mcpSeller.js"
import { FIXTURE_AMOUNT, startX402Fixture, type X402Fixture } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"

/**
 * payForTool against MCP sellers that misbehave (the official MCP SDK server, a challenge made by
 * the official x402 server packages): what is signed, what is sent, and how the answer is judged.
 */
const config = Either.getOrThrow(loadConfig(undefined, {}))
const ledger = startFixtureLedger()
let x402: X402Fixture
let seller: McpSeller

beforeAll(async () => {
  x402 = await startX402Fixture()
  const answer = await fetch(x402.url("/paid"))
  seller = startMcpSeller({
    paymentRequired: JSON.parse(Buffer.from(answer.headers.get("payment-required")!, "base64").toString("utf8")),
    extension: false
  })
})

afterAll(async () => {
  await seller?.stop()
  await x402?.stop()
  ledger.stop()
})

const pay = (
  toolName: string,
  timeoutMs = 2_000,
  allowPrivateTargets = true,
  at: McpSeller = seller,
  paidTimeoutMs?: number
) =>
  Effect.either(
    payForTool({
      ...(paidTimeoutMs === undefined ? {} : { paidTimeoutMs }),
      url: at.url,
      toolName,
      arguments: { q: 1 },
      signer: Keypair.random(),
      rpcUrl: ledger.rpcUrl,
      inclusionFeeStroops: 10_000,
      deployment: { network: config.network, assetContract: config.asset.assetContract },
      maxPrice: 1_000_000n,
      outbound: { ...config.buyer, allowPrivateTargets, timeoutMs }
    })
  )

describe("payForTool", () => {
  it.live(
    "the paid retry carries the payload in _meta; a seller that asks again settled nothing: the next provider may be tried",
    () =>
      Effect.gen(function* () {
        const paid = yield* pay("paid")
        expect(Either.isRight(paid)).toBe(true)
        const answer = Either.getOrThrow(paid)
        expect(answer.amount).toBe(FIXTURE_AMOUNT)
        expect(answer.toolError).toBe(true)
        expect(answer.paymentResponse).toBeNull()
        expect(judgePaid(answer)._tag).toBe("Unpaid")
        const retry = seller.calls.filter((c) => c.tool === "paid").at(-1)?.meta as Record<string, any>
        expect(retry[PAYMENT_META]).toMatchObject({
          x402Version: 2,
          accepted: { amount: FIXTURE_AMOUNT },
          payload: { transaction: expect.any(String) }
        })
      }),
    30_000
  )

  it.live(
    "a tool that runs unpaid, an undecodable challenge and a hanging tool: nothing signed or sent",
    () =>
      Effect.gen(function* () {
        const before = seller.calls.filter(
          (c) => c.meta !== undefined && (c.meta as Record<string, unknown>)[PAYMENT_META] !== undefined
        ).length
        expect(yield* pay("free")).toEqual(
          Either.left(
            expect.objectContaining({
              _tag: "NoPaymentRequired",
              toolAnswer: "a tool result without asking for payment"
            })
          )
        )
        expect(yield* pay("undecodable")).toEqual(Either.left(expect.objectContaining({ _tag: "ChallengeUnreadable" })))
        expect(yield* pay("hang", 300)).toEqual(Either.left(expect.objectContaining({ _tag: "Unreachable" })))
        const after = seller.calls.filter(
          (c) => c.meta !== undefined && (c.meta as Record<string, unknown>)[PAYMENT_META] !== undefined
        ).length
        expect(after).toBe(before)
      }),
    30_000
  )

  it.live(
    "a seller on a private address is refused by the outbound guard before any call",
    () =>
      Effect.gen(function* () {
        const calls = seller.calls.length
        const refused = yield* pay("paid", 2_000, false)
        expect(refused).toEqual(Either.left(expect.objectContaining({ _tag: "OutboundTargetRefused" })))
        expect(seller.calls.length).toBe(calls)
      }),
    30_000
  )

  test("a paid call that gets no answer is resent, the same signed payment with the same identifier, only when the seller offers payment-identifier", async () => {
    const challenge = JSON.parse(
      Buffer.from((await fetch(x402.url("/paid"))).headers.get("payment-required")!, "base64").toString("utf8")
    )
    const paidMetas = (at: McpSeller) =>
      at.calls
        .filter(
          (c) => c.tool === "settles" && (c.meta as Record<string, unknown> | undefined)?.[PAYMENT_META] !== undefined
        )
        .map((c) => (c.meta as Record<string, any>)[PAYMENT_META])
    const offering = startMcpSeller({
      paymentRequired: { ...challenge, extensions: { "payment-identifier": declarePaymentIdentifierExtension(false) } },
      extension: false,
      dropFirstPaid: true
    })
    const plain = startMcpSeller({ paymentRequired: challenge, extension: false, dropFirstPaid: true })
    try {
      const resent = Either.getOrThrow(await it.run(pay("settles", 2_000, true, offering, 400)))
      expect(resent).toMatchObject({ sends: 2, toolError: false, paymentResponse: { success: true } })
      const [first, second] = paidMetas(offering)
      expect(paidMetas(offering)).toHaveLength(2)
      expect(second).toEqual(first)
      expect(first.extensions["payment-identifier"].info.id).toBe(resent.paymentIdentifier)

      const once = await it.run(pay("settles", 2_000, true, plain, 400))
      expect(once).toEqual(Either.left(expect.objectContaining({ _tag: "PaymentOutcomeUnknown" })))
      expect(paidMetas(plain)).toHaveLength(1)
      expect(paidMetas(plain)[0].extensions?.["payment-identifier"]).toBeUndefined()
    } finally {
      await Promise.all([offering.stop(), plain.stop()])
    }
  }, 30_000)
})
