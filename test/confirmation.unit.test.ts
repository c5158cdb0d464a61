import { describe, expect, test } from "bun:test"
import { Option } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { evidenceShortfall } from "../src/domain/evidence.js"
import { PaymentId, PrincipalId, ResourceId, SettlementId } from "../src/domain/ids.js"
import type { JournalEntry } from "../src/domain/settlements.js"
import type { LedgerTransaction, TransferEvent } from "../src/ledger/LedgerReader.js"
import { judgeUnresolved } from "../src/settlement/reconcile.js"
import type { PendingEvent } from "../src/store/EconomicEventsRepo.js"
import { initialResolution, judgeTransaction } from "../src/verification/confirmation.js"

const PAYEE = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const PAYER = "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57"
const CLAIMED = Date.parse("2026-11-23T12:00:00.000Z")
const rules = { assetContract: TESTNET_USDC, confirmTimeoutSeconds: 120, recheckMs: 5000 }

const pending = (overrides: Partial<PendingEvent> = {}): PendingEvent => ({
  id: "eco_1",
  resourceId: ResourceId.make("r"),
  payTo: PAYEE,
  transactionHash: "a".repeat(64),
  at: new Date(CLAIMED).toISOString(),
  payer: PAYER,
  expected: { payTo: PAYEE, amount: "10000", scheme: "exact" },
  ...overrides
})

const tx = (overrides: Partial<LedgerTransaction> = {}): Option.Option<LedgerTransaction> =>
  Option.some({
    hash: "a".repeat(64),
    successful: true,
    ledger: 7,
    closedAt: new Date(CLAIMED + 5_000).toISOString(),
    transfers: [{ contract: TESTNET_USDC, from: PAYER, to: PAYEE, amount: 10_000n }],
    authorizations: [],
    ...overrides
  })

describe("confirming a reported payment on the ledger", () => {
  test("where a report starts: only a checkable success waits for the ledger; only observed failures count", () => {
    const base = {
      resourceId: ResourceId.make("r"),
      payTo: PAYEE,
      transactionHash: "a".repeat(64),
      at: "2026-11-23T12:00:00.000Z",
      payer: null,
      expected: pending().expected
    }
    expect(initialResolution({ ...base, source: "receipt", success: true }, CLAIMED)).toMatchObject({
      state: "pending",
      nextCheckMs: CLAIMED
    })
    expect(initialResolution({ ...base, source: "receipt", success: false }, CLAIMED).state).toBe("rejected")
    expect(initialResolution({ ...base, source: "settlement", success: false }, CLAIMED).state).toBe("failed")
    expect(initialResolution({ ...base, source: "probe", success: false }, CLAIMED).state).toBe("failed")
    expect(initialResolution({ ...base, source: "receipt", success: true, transactionHash: null }, CLAIMED).state).toBe(
      "rejected"
    )
    expect(initialResolution({ ...base, source: "receipt", success: true, expected: null }, CLAIMED).state).toBe(
      "rejected"
    )
  })

  test("a successful transaction paying the expected transfer is confirmed in its ledger", () => {
    expect(judgeTransaction(pending(), tx(), CLAIMED + 10_000, rules)).toMatchObject({
      state: "confirmed",
      ledger: 7,
      nextCheckMs: null
    })
  })

  test("missing: pending inside the window, rejected after it", () => {
    expect(judgeTransaction(pending(), Option.none(), CLAIMED + 60_000, rules)).toMatchObject({
      state: "pending",
      nextCheckMs: CLAIMED + 65_000
    })
    const late = judgeTransaction(pending(), Option.none(), CLAIMED + 121_000, rules)
    expect(late.state).toBe("rejected")
    expect(late.reason).toContain("not found on the ledger within 120 s")
  })

  test("each way a transaction can fail to match is a rejection with its reason", () => {
    const cases: ReadonlyArray<[string, Option.Option<LedgerTransaction>, string]> = [
      ["failed", tx({ successful: false }), "failed on the ledger"],
      [
        "another payee",
        tx({ transfers: [{ contract: TESTNET_USDC, from: PAYER, to: PAYER, amount: 10_000n }] }),
        "does not pay"
      ],
      [
        "another asset",
        tx({
          transfers: [
            {
              contract: "CAS3J7GYLGXMF6TDJBBYYSE3HQ6BBSMLNUQ34T6TZMYMW2EVH34XOWMA",
              from: PAYER,
              to: PAYEE,
              amount: 10_000n
            }
          ]
        }),
        "does not pay"
      ],
      ["less", tx({ transfers: [{ contract: TESTNET_USDC, from: PAYER, to: PAYEE, amount: 9_999n }] }), "does not pay"],
      [
        "another payer",
        tx({ transfers: [{ contract: TESTNET_USDC, from: PAYEE, to: PAYEE, amount: 10_000n }] }),
        "does not pay"
      ],
      [
        "too far from the claim",
        tx({ closedAt: new Date(CLAIMED - 3_600_000).toISOString() }),
        "more than 120 s from the claimed"
      ]
    ]
    for (const [what, found, reason] of cases) {
      const judged = judgeTransaction(pending(), found, CLAIMED + 10_000, rules)
      expect({ what, state: judged.state }).toEqual({ what, state: "rejected" })
      expect(judged.reason).toContain(reason)
    }
  })

  test("upto accepts any positive amount up to the ceiling, and nothing above it", () => {
    const upto = pending({ expected: { payTo: PAYEE, amount: "20000", scheme: "upto" } })
    const paying = (amount: bigint) => tx({ transfers: [{ contract: TESTNET_USDC, from: PAYER, to: PAYEE, amount }] })
    expect(judgeTransaction(upto, paying(15_000n), CLAIMED, rules).state).toBe("confirmed")
    expect(judgeTransaction(upto, paying(20_001n), CLAIMED, rules).state).toBe("rejected")
  })
})

const entry = (overrides: Partial<JournalEntry> = {}): JournalEntry => ({
  id: SettlementId.make("s1"),
  idempotencyKey: "k",
  paymentId: PaymentId.make("p"),
  requestHash: "h",
  state: "indeterminate",
  principal: PrincipalId.make(PAYER),
  payer: PAYER,
  network: "stellar:testnet",
  scheme: "exact",
  asset: TESTNET_USDC,
  payTo: PAYEE,
  amount: "10000",
  worstCaseUnits: 10_000n,
  feeStroops: 1_000n,
  backendId: "a",
  transaction: null,
  errors: [],
  answer: null,
  authorization: { nonce: "42", expirationLedger: 100 },
  createdAtMs: CLAIMED,
  updatedAtMs: CLAIMED,
  ...overrides
})

const event = (overrides: Partial<TransferEvent> = {}): TransferEvent => ({
  contract: TESTNET_USDC,
  from: PAYER,
  to: PAYEE,
  amount: 10_000n,
  ledger: 95,
  transactionHash: "b".repeat(64),
  closedAt: new Date(CLAIMED).toISOString(),
  ...overrides
})

describe("reconciling a settlement whose outcome is unknown", () => {
  test("a matching transfer event settles it with that transaction", () => {
    const outcome = judgeUnresolved(entry(), { nonceConsumed: false, transfers: [event()], latestLedger: 96 })
    expect(outcome).toMatchObject({
      _tag: "Settled",
      transaction: "b".repeat(64),
      answer: { success: true, transaction: "b".repeat(64) }
    })
  })

  test("a consumed nonce without a transfer carrying the authorisation concludes nothing yet", () => {
    expect(judgeUnresolved(entry(), { nonceConsumed: true, transfers: [], latestLedger: 96 })).toBeNull()
  })

  test("unpaid only once the authorisation has expired with no matching transfer; undecided before", () => {
    expect(judgeUnresolved(entry(), { nonceConsumed: false, transfers: [], latestLedger: 100 })).toBeNull()
    expect(judgeUnresolved(entry(), { nonceConsumed: false, transfers: [], latestLedger: 101 })).toMatchObject({
      _tag: "Unpaid"
    })
    // A transfer of another amount is not this payment.
    expect(
      judgeUnresolved(entry(), { nonceConsumed: false, transfers: [event({ amount: 5n })], latestLedger: 101 })
    ).toMatchObject({ _tag: "Unpaid" })
  })

  test("an entry without an authorisation is never judged", () => {
    expect(
      judgeUnresolved(entry({ authorization: null }), { nonceConsumed: false, transfers: [], latestLedger: 1_000 })
    ).toBeNull()
  })
})

describe("a settle is evidence about a resource only when it costs what the resource claims", () => {
  const option = { network: "stellar:testnet" as const, asset: TESTNET_USDC, payTo: PAYEE, amountUsd: 0.001 }
  const resource = {
    id: "r",
    paymentOptions: [
      { ...option, scheme: "exact" as const, amount: "10000" },
      { ...option, scheme: "upto" as const, amount: "5000", maxAmount: "20000", maxAmountUsd: 0.002 }
    ]
  }
  const paid = (scheme: string, amount: bigint, payTo = PAYEE) => ({
    network: "stellar:testnet",
    asset: TESTNET_USDC,
    payTo,
    scheme,
    amount
  })

  test("exact: at least the price counts, less is no evidence", () => {
    expect(evidenceShortfall(resource, paid("exact", 10_000n))).toBeNull()
    expect(evidenceShortfall(resource, paid("exact", 25_000n))).toBeNull()
    expect(evidenceShortfall(resource, paid("exact", 1n))).toContain("asks at least 10000")
  })

  test("upto: more than nothing and within the ceiling", () => {
    expect(evidenceShortfall(resource, paid("upto", 1n))).toBeNull()
    expect(evidenceShortfall(resource, paid("upto", 20_000n))).toBeNull()
    expect(evidenceShortfall(resource, paid("upto", 20_001n))).toContain("asks at most 20000")
    expect(evidenceShortfall(resource, paid("upto", 0n))).not.toBeNull()
  })

  test("a payment through none of its options (another payee) is no evidence about it", () => {
    expect(evidenceShortfall(resource, paid("exact", 10_000n, PAYER))).toContain("has no exact option")
  })
})
