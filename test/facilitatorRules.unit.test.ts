import { describe, expect, test } from "bun:test"
import { Networks } from "@stellar/stellar-sdk"
import { Either } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { channelKeypair } from "../src/facilitator/channels.js"
import { channelAction } from "../src/facilitator/cli.js"
import { belowFloor, stroopsOf } from "../src/facilitator/health.js"
import { checkPayment, EXPIRATION_TOLERANCE_LEDGERS, expirationWindow } from "../src/facilitator/verifyRules.js"
import { buildExactPayment, exactRequirements, testBuyer } from "./fixtures/stellarPayment.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const terms = { asset: TESTNET_USDC, payTo: PAY_TO, amount: 10_000n }

describe("the embedded facilitator's pure rules", () => {
  test("the expiration window is ceil(maxTimeoutSeconds / measured ledger seconds) past the current ledger", () => {
    expect(expirationWindow(1000, 60, 5)).toEqual({ currentLedger: 1000, maxLedger: 1012 })
    // Pubnet's 6 s ledgers give a narrower window than a 5 s constant would.
    expect(expirationWindow(1000, 60, 6)).toEqual({ currentLedger: 1000, maxLedger: 1010 })
    expect(expirationWindow(1000, 61, 6).maxLedger).toBe(1011)
  })

  test("checkPayment accepts the window's edge plus the reference's tolerance, and refuses one ledger more", async () => {
    const window = expirationWindow(1000, 60, 5)
    const at = async (ledger: number) =>
      checkPayment(
        (await buildExactPayment(exactRequirements({ payTo: PAY_TO }), { validUntilLedger: ledger })).payload
          .transaction,
        terms,
        new Set(),
        window,
        Networks.TESTNET
      )
    const edge = await at(window.maxLedger + EXPIRATION_TOLERANCE_LEDGERS)
    expect(Either.isRight(edge) && edge.right.payer).toBe(testBuyer.publicKey())
    const past = await at(window.maxLedger + EXPIRATION_TOLERANCE_LEDGERS + 1)
    expect(Either.isLeft(past) && past.left.reason).toBe("invalid_exact_stellar_signature_expiration_too_far")
  })

  test("a payment signed for another network fails its signature check here, as the host's simulation would", async () => {
    const payment = await buildExactPayment(exactRequirements({ payTo: PAY_TO }), { validUntilLedger: 1005 })
    const judged = checkPayment(
      payment.payload.transaction,
      terms,
      new Set(),
      expirationWindow(1000, 60, 5),
      Networks.PUBLIC
    )
    expect(Either.isLeft(judged) && judged.left.reason).toBe("invalid_exact_stellar_payload_simulation_failed")
  })

  test("channel keys are derived from the fee key: stable, distinct, and not the fee key", () => {
    const fee = testBuyer
    expect(channelKeypair(fee, 0).publicKey()).toBe(channelKeypair(fee, 0).publicKey())
    expect(new Set([0, 1, 2].map((i) => channelKeypair(fee, i).publicKey())).size).toBe(3)
    expect(channelKeypair(fee, 0).publicKey()).not.toBe(fee.publicKey())
  })

  test("the floor is in stroops at 7 decimals; below it, not at it, is unhealthy", () => {
    expect(stroopsOf(5)).toBe(50_000_000n)
    expect(stroopsOf(0.0000001)).toBe(1n)
    expect(belowFloor(49_999_999n, 50_000_000n)).toBe(true)
    expect(belowFloor(50_000_000n, 50_000_000n)).toBe(false)
  })

  test("channelAction creates a missing channel, tops up one below half the target, merges only existing ones", () => {
    expect(channelAction(null, 50_000_000n, false)).toEqual({ kind: "create", stroops: 50_000_000n })
    expect(channelAction(20_000_000n, 50_000_000n, false)).toEqual({ kind: "topUp", stroops: 30_000_000n })
    expect(channelAction(30_000_000n, 50_000_000n, false)).toEqual({ kind: "none" })
    expect(channelAction(30_000_000n, 50_000_000n, true)).toEqual({ kind: "merge" })
    expect(channelAction(null, 50_000_000n, true)).toEqual({ kind: "none" })
  })
})
