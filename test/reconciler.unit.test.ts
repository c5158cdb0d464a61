import { describe, expect } from "bun:test"
import { Effect, Layer, Option } from "effect"
import type { BudgetLimits } from "../src/domain/budgets.js"
import { PaymentId, PrincipalId, SettlementId } from "../src/domain/ids.js"
import { LedgerReader } from "../src/ledger/LedgerReader.js"
import { BATCH, Reconciler } from "../src/settlement/Reconciler.js"
import { SettlementJournal } from "../src/store/SettlementJournal.js"
import { StoreTest } from "../src/store/Store.js"
import { EvidenceReader } from "../src/verification/EvidenceReader.js"
import { it } from "./support/effectTest.js"
import { makeTestLayer } from "./support/testLayer.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const ASSET = "CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA"
/** The one payer whose payment the ledger shows executed; every other payer's nonce is spent with no transfer yet (undecidable). */
const PAID = "GAPAIDPAYER"
const LATEST = 1_000
/** Budgets no entry of these tests reaches: the reconciler, not the budgets, is under test. */
const unlimited: BudgetLimits = {
  windowSeconds: 3600,
  feeCeilingStroops: 1,
  globalFeeStroops: Number.MAX_SAFE_INTEGER,
  perPrincipalFeeStroops: Number.MAX_SAFE_INTEGER,
  spendWindowUsd: 1_000_000,
  decimals: 7
}

/**
 * A ledger on which every entry's nonce reads consumed (so the reconciler must wait on it) and only
 * PAID's transfer exists, in a transaction carrying its authorisation.
 */
const ledger = makeTestLayer(LedgerReader)({
  latestLedger: () => Effect.succeed(LATEST),
  nonceConsumed: () => Effect.succeed(true),
  transferEvents: ({ from }) =>
    Effect.succeed(
      from === PAID
        ? [
            {
              contract: ASSET,
              from,
              to: PAY_TO,
              amount: 100n,
              ledger: LATEST - 1,
              transactionHash: "ab".repeat(32),
              closedAt: new Date(0).toISOString()
            }
          ]
        : []
    ),
  transaction: (hash) =>
    Effect.succeed(
      Option.some({
        hash,
        successful: true,
        ledger: LATEST - 1,
        closedAt: new Date(0).toISOString(),
        transfers: [],
        authorizations: [{ form: "addressV2" as const, address: PAID, nonce: 7n, expirationLedger: LATEST + 100 }]
      })
    )
})

const layer = Reconciler.Live.pipe(Layer.provideMerge(Layer.mergeAll(StoreTest, ledger, EvidenceReader.Test([], []))))

/** An `indeterminate` entry (a settle whose backend went silent), id `n` in the journal's order. */
const indeterminate = (n: number, payer: string, nonce: string) =>
  Effect.gen(function* () {
    const journal = yield* SettlementJournal
    const id = SettlementId.make(`entry-${String(n).padStart(4, "0")}`)
    const reserved = yield* journal.reserve(
      {
        id,
        idempotencyKey: undefined,
        paymentId: PaymentId.make(n.toString(16).padStart(64, "0")),
        requestHash: `request-${n}`,
        principal: PrincipalId.make(payer),
        payer,
        network: "stellar:testnet",
        scheme: "exact",
        asset: ASSET,
        payTo: PAY_TO,
        amount: "100",
        worstCaseUnits: 100n,
        feeStroops: 0n,
        authorization: { nonce, expirationLedger: LATEST + 100 }
      },
      unlimited,
      n,
      Effect.void
    )
    expect(reserved._tag).toBe("Reserved")
    yield* journal.complete(
      id,
      {
        state: "indeterminate",
        reason: "the backend went silent",
        submitted: true,
        backendId: "a",
        transaction: null,
        payer: null,
        errors: [],
        answer: { status: 502, body: {} }
      },
      n
    )
    return id
  })

describe("the reconciler visits every unresolved entry in turn", () => {
  it.live(`${BATCH + 10} undecidable entries do not starve a later one the ledger shows paid`, () =>
    Effect.gen(function* () {
      for (let n = 0; n < BATCH + 10; n++) yield* indeterminate(n, `GSTUCK${n}`, String(1_000 + n))
      // The decidable entry comes last in every order the journal has (id, creation, update).
      const late = yield* indeterminate(9_999, PAID, "7")
      const { reconcileOnce } = yield* Reconciler
      const journal = yield* SettlementJournal
      const reports = []
      for (let pass = 0; pass < 2; pass++) reports.push(yield* reconcileOnce)
      expect(reports.map((r) => r.checked)).toEqual([BATCH, 11])
      expect(reports[1]!.settled).toBe(1)
      // The pass after the end starts from the first entry again.
      expect((yield* reconcileOnce).checked).toBe(BATCH)
      expect(Option.getOrThrow(yield* journal.get(late)).state).toBe("settled")
    }).pipe(Effect.provide(layer))
  )
})
