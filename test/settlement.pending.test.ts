import { describe, expect, test } from "bun:test"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ResourceId } from "../src/domain/ids.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { it } from "./support/effectTest.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { pollUntil } from "./support/poll.js"
import { ledgerPayment, twoBackendService } from "./support/twoBackends.js"

/**
 * A backend's `settlement_pending` answer (x402 2.20+) on the nonce-enforcing fixture ledger, with
 * two fixture facilitators, A first. The attacks: paying twice (B, or a second submission, after A
 * broadcast), and counting a payment that may still land as a failure.
 */
const shared = sharedLedgerAndSeller()
const { ledger } = shared

/** `reconcileSeconds`: how often the reconciler runs (long keeps it out of the retry's way). */
const setup = async (reconcileSeconds: number, database = ":memory:") => {
  const service = await twoBackendService(shared, (config) => ({
    ...config,
    database,
    ledger: { ...config.ledger, pollIntervalSeconds: reconcileSeconds }
  }))
  const only = async () => service.record((await service.journal())[0]!.id as string)
  const settles = () => [service.a.calls("/settle"), service.b.calls("/settle")]
  return { ...service, only, settles }
}

const payment = (seed: number, ledgers = 50) => ledgerPayment(shared, seed, ledgers)

describe("settlement_pending: broadcast, not declined", () => {
  test("the entry is pending with the transaction; the ledger confirms it and the retry gets the settlement with no second forward", async () => {
    const { a, settle, only, settles, server } = await setup(60)
    const settlementEvidence = async () =>
      (
        await it.run(server.client.resources.get({ path: { id: ResourceId.make("fixture.paid") } }))
      ).economicEvidence.filter((e) => e.source === "settlement")
    a.setMode("settlePending")
    const { payer, body } = await payment(131)
    const first = await settle(body)
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({
      success: false,
      errorReason: "settlement_pending",
      network: "stellar:testnet",
      payer
    })
    const transaction = first.body.transaction as string
    expect(ledger.succeeded(transaction)).toBe(true)
    const pending = await only()
    expect(pending).toMatchObject({ state: "pending", backendId: "a", transaction, errors: [] })
    expect(settles()).toEqual([1, 0])
    // No evidence either way while it may still land: nothing counts against the payee.
    expect(await settlementEvidence()).toEqual([])

    a.setMode("succeed")
    const retry = await settle(body)
    expect(retry).toMatchObject({ status: 200, body: { success: true, transaction, payer } })
    // Resolved from the ledger: neither A nor B was sent the payload again.
    expect(settles()).toEqual([1, 0])
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
    const settled = await only()
    expect(settled).toMatchObject({ state: "settled", transaction })
    expect(settled.history.map((h: { from: string | null; to: string }) => [h.from, h.to])).toEqual([
      [null, "pending"],
      ["pending", "pending"],
      ["pending", "settled"]
    ])
    // Resolved, it is the payee's evidence like any settlement: the ledger then confirms it.
    expect(await settlementEvidence()).toEqual([expect.objectContaining({ transactionHash: transaction })])
    // A further repeat is the stored settlement.
    expect((await settle(body)).body).toEqual(retry.body)
    expect(settles()).toEqual([1, 0])
  }, 30_000)

  test("while the ledger lacks the transaction, the retry asks the same backend only, and stays pending when it cannot answer", async () => {
    const { a, settle, only, settles } = await setup(60)
    a.setMode("pendingLost")
    const { body } = await payment(132)
    const first = await settle(body)
    expect(first.body).toMatchObject({ success: false, errorReason: "settlement_pending" })
    a.setMode("settle500")
    const again = await settle(body)
    expect(again).toMatchObject({ status: 200, body: first.body })
    expect(settles()).toEqual([2, 0])
    expect(await only()).toMatchObject({ state: "pending", backendId: "a" })

    // The backend reconciles its own broadcast: it never landed, so it reports the failure.
    a.setMode("succeed")
    const resolved = await settle(body)
    expect(resolved.body).toMatchObject({ success: false, errorReason: "transaction_failed" })
    expect(settles()).toEqual([3, 0])
    expect(await only()).toMatchObject({ state: "failed", backendId: "a" })
  }, 30_000)

  test("a pending answer whose transaction never lands is resolved by the reconciler once the authorisation expired", async () => {
    const { a, settle, only, settles } = await setup(0.2)
    a.setMode("pendingLost")
    const { body } = await payment(133, 5)
    expect((await settle(body)).body).toMatchObject({ success: false, errorReason: "settlement_pending" })
    await Bun.sleep(600)
    expect((await only()).state).toBe("pending")
    ledger.advanceLedgers(10)
    const after = await pollUntil("the pending settlement is reconciled", only, (r) => r.state !== "pending")
    expect(after.state).toBe("failed")
    expect(after.history.at(-1)).toMatchObject({ from: "pending", to: "failed" })
    expect(after.history.at(-1).reason).toContain("never happened")
    expect(settles()).toEqual([1, 0])
  }, 30_000)

  test("a restart leaves a pending answer to the reconciler, not indeterminate; the retry after it gets the settlement", async () => {
    const database = join(mkdtempSync(join(tmpdir(), "sextant-pending-")), "sextant.db")
    const before = await setup(60, database)
    before.a.setMode("settlePending")
    const { payer, body } = await payment(134)
    const first = await before.settle(body)
    expect(first.body).toMatchObject({ errorReason: "settlement_pending" })
    await before.server.close()
    const after = await setup(60, database)
    // The reconciler's first pass at start finds the transaction on the ledger; crash recovery never touched the entry.
    const record = await pollUntil("the pending settlement is reconciled", after.only, (r) => r.state !== "pending")
    expect(record).toMatchObject({ state: "settled", transaction: first.body.transaction })
    expect(record.history.map((h: { to: string }) => h.to)).toEqual(["pending", "pending", "settled"])
    expect((await after.settle(body)).body).toMatchObject({ success: true, transaction: first.body.transaction, payer })
    expect(after.settles()).toEqual([0, 0])
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)
})
