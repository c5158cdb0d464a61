import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import type { LedgerTransaction } from "../src/ledger/LedgerReader.js"
import { outcomeEvent, paidEntry, reportsPayment } from "../src/preflight/outcome.js"
import { initialResolution } from "../src/verification/confirmation.js"
import { option, payee, record } from "./fixtures/evidence.js"

const deployment = { network: "stellar:testnet", assetContract: TESTNET_USDC }
const entries = [
  record("a.inspect", [option({ amount: "10000", payTo: payee(1) })]),
  record("b.inspect", [option({ amount: "500", payTo: payee(2) })])
]
const tx = (transfers: LedgerTransaction["transfers"], successful = true): LedgerTransaction => ({
  hash: "ab".repeat(32),
  successful,
  ledger: 7,
  closedAt: "2026-11-29T00:00:00Z",
  transfers,
  authorizations: []
})
const usdc = (to: string, amount: bigint, contract = TESTNET_USDC) => ({ contract, from: payee(9), to, amount })

describe("which entry a reported transaction paid", () => {
  test("the entry whose payee got at least its price, in this asset", () => {
    const paid = paidEntry(entries, tx([usdc(payee(2), 600n)]), "h", deployment)
    expect(Either.getOrThrow(paid).record.resource.id).toBe<string>("b.inspect")
    expect(
      Either.getOrThrow(paidEntry(entries, tx([usdc(payee(1), 10_000n)]), "h", deployment)).record.resource.id
    ).toBe<string>("a.inspect")
  })

  test("less than the price, another asset, another payee, a failed or unknown transaction: refused", () => {
    for (const found of [
      tx([usdc(payee(1), 9_999n)]),
      tx([usdc(payee(1), 10_000n, "C".padEnd(56, "A"))]),
      tx([usdc(payee(3), 10_000n)]),
      tx([usdc(payee(1), 10_000n)], false),
      null
    ]) {
      expect(Either.isLeft(paidEntry(entries, found, "h", deployment))).toBe(true)
    }
  })

  test("only settled and delivered reports can count; the others start rejected, naming what was reported", () => {
    expect(["settled", "delivered", "refused", "not_delivered"].map((o) => reportsPayment(o as never))).toEqual([
      true,
      true,
      false,
      false
    ])
    const paid = Either.getOrThrow(paidEntry(entries, tx([usdc(payee(1), 12_000n)]), "h", deployment))
    const report = (outcome: "delivered" | "not_delivered") => ({
      url: entries[0]!.resource.url,
      outcome,
      transactionHash: "ab".repeat(32)
    })
    const delivered = outcomeEvent(report("delivered"), paid, "2026-11-29T00:00:00Z")
    expect(delivered).toMatchObject({
      source: "outcome",
      success: true,
      payer: payee(9),
      expected: { payTo: payee(1), amount: "12000", scheme: "exact" }
    })
    expect(initialResolution(delivered, 0).state).toBe("pending")
    const shown = initialResolution(outcomeEvent(report("not_delivered"), paid, "2026-11-29T00:00:00Z"), 0)
    expect(shown).toMatchObject({ state: "rejected", reason: expect.stringContaining("not_delivered") })
  })
})
