import { Database } from "bun:sqlite"
import { afterAll, describe, expect, test } from "bun:test"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { startFacilitator } from "./fixtures/facilitator.js"
import { payFor, startPaidResource } from "./fixtures/paidResource.js"
import { buildExactPayment, settleBody } from "./fixtures/stellarPayment.js"
import { LOOPBACK, pollUntil } from "./support/poll.js"
import { forwardedPayments, type SellerProcess, startSellerProcess } from "./support/sellerProcess.js"
import { launchServe, type ServeChild, serveArgv } from "./support/serveProcess.js"
import { facilitatorsAnswered, request } from "./support/server.js"

/** The journal as the store holds it, read straight from the SQLite file. */
const journalRows = (database: string) => {
  const db = new Database(database, { readonly: true })
  try {
    return db.query("SELECT state, transaction_hash, fee_stroops FROM settlements").all() as Array<{
      state: string
      transaction_hash: string | null
      fee_stroops: number
    }>
  } finally {
    db.close()
  }
}

/** The signed transaction (base64 XDR) a settle body carries, as `forwardedPayments` reads it. */
const transactionOf = (body: unknown) =>
  String((body as { paymentPayload: { payload: { transaction: string } } }).paymentPayload.payload.transaction)

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const RESOURCE_ID = "seller.rwa.inspect"

const backend = startFacilitator()
const resource = startPaidResource({ payTo: PAY_TO, amount: "10000" })
const children: Array<ServeChild> = []

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill()))
  await backend.stop()
  await resource.stop()
})

/**
 * Starts `sextant serve` as its own process (its config binds port 0) and resolves with the
 * address it reports once it listens and its facilitator answered /supported.
 */
const serve = async (configFile: string, logFile: string) => {
  const launched = await launchServe(serveArgv(configFile), { logFile })
  children.push(launched)
  await facilitatorsAnswered(launched.url)
  return launched
}

describe("crash recovery", () => {
  test("a service killed while a backend holds its settle open restarts with the entry indeterminate, never re-sent", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sextant-crash-"))
    const configFile = join(dir, "sextant.json")
    writeFileSync(
      configFile,
      JSON.stringify({
        host: "127.0.0.1",
        port: 0,
        database: join(dir, "sextant.db"),
        facilitators: [{ id: "fixture", url: backend.url }],
        catalog: [resource.catalogEntry(RESOURCE_ID)],
        probes: { allowPrivateTargets: true, intervalSeconds: 86400 },
        vertical: { enabled: false }
      })
    )

    const first = await serve(configFile, join(dir, "first.log"))
    await resource.useFacilitator(`${first.url}/x402`)
    const probe = await request(`${first.url}/v1/validate`, { method: "POST", json: { resourceId: RESOURCE_ID } })
    expect(probe.body.healthy).toBe(true)
    const unpaid = await fetch(resource.url)
    let body: unknown = null
    await payFor(unpaid.headers.get("payment-required") ?? "", async (requirements) => {
      const payment = await buildExactPayment(requirements)
      body = settleBody(payment, requirements)
      return payment
    })

    backend.setMode("hang")
    const inFlight = request(`${first.url}/x402/settle`, { method: "POST", json: body }).catch((e: unknown) => e)
    await pollUntil(
      "the backend holds a settle",
      async () => backend.calls("/settle"),
      (n) => n > 0,
      LOOPBACK
    )
    expect(backend.calls("/settle")).toBe(1)
    await first.kill()
    expect(await inFlight).toBeInstanceOf(Error)
    backend.setMode("succeed")

    const second = await serve(configFile, join(dir, "second.log"))
    const retry = await request(`${second.url}/x402/settle`, { method: "POST", json: body })
    expect(retry.status).toBe(409)
    expect(retry.body).toMatchObject({ error: "SETTLEMENT_UNRESOLVED" })
    const id = /settlement ([0-9a-f-]{36})/.exec(retry.body.message)?.[1]
    expect(id).toBeDefined()
    const record = await request(`${second.url}/x402/settlements/${id}`)
    expect(record.status).toBe(200)
    expect(record.body).toMatchObject({ id, state: "indeterminate", payTo: PAY_TO, amount: "10000", transaction: null })
    // Neither the restart nor the retry sent the payment again.
    expect(backend.calls("/settle")).toBe(1)
  }, 20_000)
})

/** A small seeded generator (mulberry32), so the kill moments are the same on every run of one seed. */
const seededRandom = (seed: number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe("crash injection", () => {
  const ITERATIONS = 20
  const NEW_PER_ITERATION = 6
  const FEE = 1_000_000
  /** The global fee budget holds 40 settlements: the later payments must be refused, never overspent. */
  const BUDGET_SETTLEMENTS = 40
  const seed = Number(process.env.FC_SEED ?? 18)
  let stack: SellerProcess
  afterAll(async () => {
    await stack?.stop()
  })

  test(`${ITERATIONS} SIGKILLs at random moments of concurrent settles, restart and replay: nothing forwarded twice, every request journaled or refused, the budget held`, async () => {
    const random = seededRandom(seed)
    stack = await startSellerProcess({
      budgets: { feeCeilingStroops: FEE, globalFeeStroops: FEE * BUDGET_SETTLEMENTS, perPrincipalFeeStroops: FEE * 10 },
      limits: { settle: null }
    })
    type Answer = { status: number; body: any } | Error
    const sent: Array<{ body: unknown; answers: Array<Answer> }> = []
    let previous: typeof sent = []
    for (let iteration = 0; iteration < ITERATIONS; iteration++) {
      const child = await stack.launch()
      if (iteration === 0) await stack.validate(child)
      stack.backend.setSettleDelay(Math.floor(random() * 150))
      const fresh = await Promise.all(
        Array.from({ length: NEW_PER_ITERATION }, async (_, i) => ({
          body: await stack.settleBodyFor(100 + iteration * NEW_PER_ITERATION + i),
          answers: [] as Array<Answer>
        }))
      )
      sent.push(...fresh)
      // The last batch again (a client retrying after the crash), and the new payments, all at once.
      const batch = [...previous, ...fresh]
      const inFlight = batch.map((entry) =>
        request(`${child.url}/x402/settle`, { method: "POST", json: entry.body })
          .catch((e: Error) => e)
          .then((answer) => entry.answers.push(answer))
      )
      await Bun.sleep(Math.floor(random() * 800))
      await child.kill()
      await Promise.all(inFlight)
      previous = fresh
    }

    const final = await stack.launch()
    const replies: Array<{ status: number; body: any }> = []
    for (const entry of sent)
      replies.push(await request(`${final.url}/x402/settle`, { method: "POST", json: entry.body }))

    // 1. No payment reached the facilitator twice, across every crash, restart and replay.
    const forwarded = forwardedPayments(stack.backend)
    expect(new Set(forwarded).size).toBe(forwarded.length)

    // 2. Every request is journaled (its replay gets the stored answer, or 409 while its outcome is
    // unknown) or refused (429, nothing reserved); no other answer, and no 5xx, ever.
    const rows = journalRows(stack.database)
    const byTransaction = new Map(rows.filter((r) => r.transaction_hash !== null).map((r) => [r.transaction_hash, r]))
    for (const [i, reply] of replies.entries()) {
      expect([200, 409, 429]).toContain(reply.status)
      if (reply.status === 200) expect(byTransaction.get(reply.body.transaction)?.state).toBe("settled")
      if (reply.status === 409) expect(reply.body.error).toBe("SETTLEMENT_UNRESOLVED")
      if (reply.status === 429) expect(reply.body.error).toBe("FEE_BUDGET_EXHAUSTED")
      for (const answer of sent[i]!.answers) {
        if (answer instanceof Error) continue
        expect(answer.status).toBeLessThan(500)
        // An answer a buyer once got is never lost: a success is in the journal as settled.
        if (answer.status === 200) expect(byTransaction.get(answer.body.transaction)?.state).toBe("settled")
      }
    }
    expect(rows.length).toBe(replies.filter((r) => r.status !== 429).length)
    expect(rows.every((r) => ["settled", "indeterminate", "failed"].includes(r.state))).toBe(true)
    expect(forwarded.length).toBeLessThanOrEqual(rows.length)

    // 3. The fee budget was filled to its edge and never overspent, whatever the crashes
    // interrupted: every payment was sent again at the end, so a free reservation would have been
    // taken, and each journaled payment holds exactly the fee ceiling.
    const charged = rows.reduce((sum, r) => sum + Number(r.fee_stroops), 0)
    expect(charged).toBe(FEE * BUDGET_SETTLEMENTS)

    // 4. Which settles succeed and which are refused: the journal's settled payments are answered
    // 200 (some must be), its unresolved ones 409, every other payment 429, and no refused payment
    // ever reached the facilitator.
    const answered = (status: number) => replies.filter((r) => r.status === status).length
    expect(answered(200)).toBeGreaterThan(0)
    expect(answered(200)).toBe(rows.filter((r) => r.state === "settled").length)
    expect(answered(409)).toBe(rows.filter((r) => r.state === "indeterminate").length)
    expect(answered(429)).toBe(sent.length - rows.length)
    const refused = sent.filter((_, i) => replies[i]!.status === 429).map((entry) => transactionOf(entry.body))
    expect(refused.filter((transaction) => forwarded.includes(transaction))).toEqual([])
  }, 120_000)
})
