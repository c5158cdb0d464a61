import { describe, expect, test } from "bun:test"
import type { FixtureFacilitator } from "./fixtures/facilitator.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { pollUntil } from "./support/poll.js"
import { ledgerPayment, twoBackendService } from "./support/twoBackends.js"

/**
 * Settle failover on the nonce-enforcing fixture ledger with two fixture facilitators, A first.
 * The attack each case would be: paying twice (B executing what A already executed), or answering
 * "failed" / "unknown" for a payment the ledger shows executed.
 */
const shared = sharedLedgerAndSeller()
const { ledger } = shared

const setup = (options: { deadlineSeconds?: number } = {}) =>
  twoBackendService(shared, (config) => ({ ...config, settleDeadlineSeconds: options.deadlineSeconds ?? 30 }))

const payment = (seed: number, ledgers = 50) => ledgerPayment(shared, seed, ledgers)

const settleCalls = (...backends: ReadonlyArray<FixtureFacilitator>) => backends.map((f) => f.calls("/settle"))

describe("settle failover, made safe by the payer's single-use nonce", () => {
  test("(a) A executes the payment then answers 500: 200 with A's transaction, B never called", async () => {
    const { a, b, settle, journal } = await setup()
    a.setMode("execute500")
    const { payer, body } = await payment(91)
    const answer = await settle(body)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true, network: "stellar:testnet", payer })
    expect(ledger.succeeded(answer.body.transaction)).toBe(true)
    expect(settleCalls(a, b)).toEqual([1, 0])
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
    const [entryRecord] = await journal()
    expect(entryRecord).toMatchObject({ state: "settled", backendId: "a", transaction: answer.body.transaction })
    // A repeat gets the stored answer, not a second submission.
    expect((await settle(body)).body).toEqual(answer.body)
    expect(settleCalls(a, b)).toEqual([1, 0])
  }, 30_000)

  test("(b) A answers 500 without executing: B settles, one transfer on the ledger, the attempt journaled and charged", async () => {
    const { a, b, settle, record, journal } = await setup()
    a.setMode("settle500")
    const { payer, body } = await payment(92)
    const answer = await settle(body)
    expect(answer.status).toBe(200)
    expect(answer.body).toMatchObject({ success: true, payer })
    expect(settleCalls(a, b)).toEqual([1, 1])
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
    const [found] = await journal()
    const settled = await record(found!.id as string)
    expect(settled).toMatchObject({ state: "settled", backendId: "b", transaction: answer.body.transaction })
    const attempt = settled.history.find(
      (h: { from: string | null; to: string }) => h.from === "pending" && h.to === "pending"
    )
    expect(attempt.reason).toContain('forwarded again, to facilitator "b"')
    expect(attempt.reason).toContain("unconsumed")
    // B, told the same payload again (as A might submit it late), cannot execute it a second time.
    b.setMode("succeed")
    const replayAtB = await fetch(`${b.url}/settle`, {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" }
    })
    expect((await replayAtB.json()).success).toBe(false)
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)

  test("(c) A hangs: the answer arrives within the deadline, from B", async () => {
    const { a, b, settle } = await setup({ deadlineSeconds: 3 })
    a.setMode("settleHang")
    const { payer, body } = await payment(93)
    const started = performance.now()
    const answer = await settle(body)
    const elapsed = performance.now() - started
    expect(elapsed).toBeLessThan(3_000)
    expect(answer).toMatchObject({ status: 200, body: { success: true, payer } })
    expect(settleCalls(a, b)).toEqual([1, 1])
    a.release()
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)

  test("(c) A and B both hang: 502 SETTLEMENT_INDETERMINATE within the deadline", async () => {
    const { a, b, settle } = await setup({ deadlineSeconds: 3 })
    a.setMode("settleHang")
    b.setMode("settleHang")
    const started = performance.now()
    const answer = await settle((await payment(94)).body)
    expect(performance.now() - started).toBeLessThan(3_500)
    expect(answer).toMatchObject({ status: 502, body: { error: "SETTLEMENT_INDETERMINATE" } })
    a.release()
    b.release()
  }, 30_000)

  test("(d) the ledger unreachable: 502 SETTLEMENT_INDETERMINATE, B never called, and the reconciler settles it once the ledger is back", async () => {
    const { a, b, settle, record } = await setup()
    a.setMode("execute500")
    const { payer, body } = await payment(95)
    ledger.setUnreachable("both")
    const answer = await settle(body)
    ledger.setUnreachable("both", false)
    expect(answer).toMatchObject({ status: 502, body: { error: "SETTLEMENT_INDETERMINATE" } })
    expect(answer.body.message).toContain("the ledger could not be read")
    expect(settleCalls(a, b)).toEqual([1, 0])
    const id = /Settlement (\S+) is journaled/.exec(answer.body.message)?.[1]
    const resolved = await pollUntil(
      `settlement ${id} is reconciled`,
      () => record(id!),
      (r) => r.state !== "indeterminate"
    )
    expect(resolved.state).toBe("settled")
    expect(ledger.succeeded(resolved.transaction)).toBe(true)
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)
})

describe("failover never answers a refusal it cannot prove", () => {
  test("A submits and answers 504, B fails on the spent nonce while the ledger answers 503: 502 SETTLEMENT_INDETERMINATE, later settled", async () => {
    const { a, b, settle, record } = await setup()
    // A's transaction (and the nonce it spends) shows on the ledger only after a while, so B is tried.
    a.setMode("executeLate504")
    // The ledger fails just as B answers: the re-read after B's refusal cannot tell.
    b.beforeSettleAnswer(() => ledger.setFailing("both"))
    const { payer, body } = await payment(96)
    const answer = await settle(body)
    b.beforeSettleAnswer(() => {})
    ledger.setFailing("both", false)
    expect(answer).toMatchObject({ status: 502, body: { error: "SETTLEMENT_INDETERMINATE" } })
    expect(settleCalls(a, b)).toEqual([1, 1])
    const id = /Settlement (\S+) is journaled/.exec(answer.body.message)?.[1]
    expect(await record(id!)).toMatchObject({ state: "indeterminate" })
    const resolved = await pollUntil(
      `settlement ${id} is reconciled`,
      () => record(id!),
      (r) => r.state !== "indeterminate"
    )
    expect(resolved.state).toBe("settled")
    expect(ledger.succeeded(resolved.transaction)).toBe(true)
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)

  test("a further attempt is judged against the fee budget: with room for one fee, B is never sent the payload", async () => {
    const { a, b, settle, record } = await twoBackendService(shared, (config) => ({
      ...config,
      budgets: { ...config.budgets, feeCeilingStroops: 1_000, globalFeeStroops: 1_000 }
    }))
    a.setMode("settle500")
    const answer = await settle((await payment(97)).body)
    expect(answer).toMatchObject({ status: 502, body: { error: "SETTLEMENT_INDETERMINATE" } })
    expect(answer.body.message).toContain("sponsored-fee budget is exhausted")
    expect(settleCalls(a, b)).toEqual([1, 0])
    const id = /Settlement (\S+) is journaled/.exec(answer.body.message)?.[1]
    const { history } = await record(id!)
    expect(
      history.filter((h: { from: string | null; to: string }) => h.from === "pending" && h.to === "pending")
    ).toEqual([])
  }, 30_000)
})
