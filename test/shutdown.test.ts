import { Database } from "bun:sqlite"
import { afterAll, describe, expect, test } from "bun:test"
import { LOOPBACK, pollUntil } from "./support/poll.js"
import { type SellerProcess, startSellerProcess } from "./support/sellerProcess.js"
import { request } from "./support/server.js"

const stacks: Array<SellerProcess> = []
afterAll(async () => {
  await Promise.all(stacks.map((s) => s.stop()))
})

const journal = (database: string) => {
  const db = new Database(database, { readonly: true })
  try {
    return db.query("SELECT state, transaction_hash FROM settlements").all() as Array<{
      state: string
      transaction_hash: string | null
    }>
  } finally {
    db.close()
  }
}

const settle = (url: string, body: unknown) =>
  request(`${url}/x402/settle`, { method: "POST", json: body }).catch((e: Error) => e)

/**
 * A serving process with `count` settles held at a facilitator taking `settleDelayMs`, then
 * SIGTERM: the moment of the signal and the buyers' answers still to come.
 */
const signalWithSettlesInFlight = async (
  shutdownGraceSeconds: number,
  count: number,
  firstBuyer: number,
  settleDelayMs: number
) => {
  const stack = await startSellerProcess({ shutdownGraceSeconds })
  stacks.push(stack)
  const child = await stack.launch()
  await stack.validate(child)
  const bodies = await Promise.all(Array.from({ length: count }, (_, i) => stack.settleBodyFor(firstBuyer + i)))
  stack.backend.setSettleDelay(settleDelayMs)
  const answers = bodies.map((body) => settle(child.url, body))
  await pollUntil(
    `the facilitator holds ${count} settle(s)`,
    async () => stack.backend.calls("/settle"),
    (n) => n === count,
    LOOPBACK
  )
  const signalledAt = Date.now()
  child.child.kill("SIGTERM")
  return { stack, child, bodies, answers, signalledAt }
}

describe("graceful shutdown (SIGTERM)", () => {
  test("10 settles in flight at a facilitator taking 2 s: all answered 200 with their transaction, journaled settled, exit 0", async () => {
    const { stack, child, answers, signalledAt } = await signalWithSettlesInFlight(30, 10, 1, 2_000)

    // While it drains (from a moment after the signal, once the schedules stopped): readiness is
    // 503 with the reason, and a new request is turned away.
    const ready = await pollUntil(
      "readiness turns 503",
      () => request(`${child.url}/health/ready`),
      (r) => r.status === 503,
      LOOPBACK
    )
    expect(ready.body).toEqual({ error: "NOT_READY", message: expect.stringContaining("shutting down") })
    const turnedAway = await request(`${child.url}/v1/resources`)
    expect(turnedAway.status).toBe(503)
    expect(turnedAway.body).toMatchObject({ error: "SHUTTING_DOWN", retryAfterSeconds: 5 })
    expect(turnedAway.headers.get("retry-after")).toBe("5")

    const results = await Promise.all(answers)
    for (const result of results) {
      expect(result).not.toBeInstanceOf(Error)
      const { status, body } = result as Exclude<typeof result, Error>
      expect(status).toBe(200)
      expect(body).toMatchObject({ success: true, transaction: expect.stringMatching(/^[0-9a-f]{64}$/) })
    }
    expect(await child.child.exited).toBe(0)
    // It waited for the facilitator, and no longer than it needed to.
    expect(Date.now() - signalledAt).toBeGreaterThan(1_500)
    expect(Date.now() - signalledAt).toBeLessThan(10_000)
    const rows = journal(stack.database)
    expect(rows).toHaveLength(10)
    expect(rows.every((r) => r.state === "settled" && r.transaction_hash !== null)).toBe(true)
    expect(child.output()).toContain("nothing left in flight")
  }, 40_000)

  test("with a grace of 1 s the process exits at once; the unfinished settles are recovered as after a crash, never re-sent", async () => {
    const { stack, child, bodies, answers, signalledAt } = await signalWithSettlesInFlight(1, 3, 20, 5_000)
    expect(await child.child.exited).toBe(1)
    expect(Date.now() - signalledAt).toBeLessThan(3_000)
    for (const result of await Promise.all(answers)) expect(result).toBeInstanceOf(Error)
    expect(journal(stack.database).map((r) => r.state)).toEqual(["pending", "pending", "pending"])

    stack.backend.setSettleDelay(0)
    const again = await stack.launch()
    expect(journal(stack.database).map((r) => r.state)).toEqual(["indeterminate", "indeterminate", "indeterminate"])
    const retry = await settle(again.url, bodies[0])
    expect(retry).toMatchObject({ status: 409, body: { error: "SETTLEMENT_UNRESOLVED" } })
    expect(stack.backend.calls("/settle")).toBe(3)
  }, 40_000)

  test("a second signal exits at once without waiting for the grace", async () => {
    const { child, answers, signalledAt } = await signalWithSettlesInFlight(30, 1, 40, 10_000)
    await pollUntil(
      "the drain began",
      async () => child.output(),
      (out) => out.includes("shutting down: waiting"),
      LOOPBACK
    )
    child.child.kill("SIGINT")
    expect(await child.child.exited).toBe(1)
    expect(Date.now() - signalledAt).toBeLessThan(3_000)
    expect(await answers[0]).toBeInstanceOf(Error)
  }, 30_000)
})
