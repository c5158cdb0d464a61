import { describe, expect, test } from "bun:test"
import { startFacilitator } from "./fixtures/facilitator.js"
import { settlePayment } from "./fixtures/ledger.js"
import { authNonces, hostCallOf } from "./fixtures/ledgerXdr.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { entry } from "./fixtures/verificationStack.js"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { pollUntil } from "./support/poll.js"
import { facilitatorsAnswered, ledgerAt, request, startServer, testConfig } from "./support/server.js"

const { ledger, running, seller } = sharedLedgerAndSeller()

/**
 * A service whose one backend answers settle with 500 (so the outcome is unknown) until told
 * otherwise, and a probed payee. Each test has its own service and backend.
 */
const setup = async () => {
  const backend = startFacilitator({ ledger, mode: "settle500" })
  const base = testConfig()
  const server = await startServer(
    testConfig({
      facilitators: [{ id: "a", url: backend.url }],
      // A 500 marks the backend unhealthy; the next poll finds it well again.
      facilitatorPollSeconds: 0.3,
      catalog: [entry("fixture.paid", seller().url("/paid"))],
      probes: { ...base.probes, allowPrivateTargets: true },
      ledger: ledgerAt(ledger)
    })
  )
  running.push(server, { close: async () => backend.stop() })
  await facilitatorsAnswered(server.url)
  // Settlement pays only a payee with probe evidence.
  expect(
    (await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "fixture.paid" } })).body.outcome
  ).toBe("healthy")
  const settle = (body: unknown) => request(`${server.url}/x402/settle`, { method: "POST", json: body })
  const record = async (id: string) => (await request(`${server.url}/x402/settlements/${id}`)).body
  /** The journal entry a 502 SETTLEMENT_INDETERMINATE names. */
  const indeterminate = async (body: unknown) => {
    const answer = await settle(body)
    expect(answer).toMatchObject({ status: 502, body: { error: "SETTLEMENT_INDETERMINATE" } })
    const id = /Settlement (\S+) is journaled/.exec(answer.body.message)?.[1]
    expect(id).toBeDefined()
    return id!
  }
  const resolved = (id: string) =>
    pollUntil(
      `settlement ${id} is reconciled`,
      () => record(id),
      (r) => r.state !== "indeterminate"
    )
  const backendHealthy = () =>
    pollUntil(
      "the backend is healthy again",
      async () => (await request(`${server.url}/x402/facilitators`)).body.facilitators,
      (f) => f?.[0]?.healthy === true
    )
  return { backend, settle, record, indeterminate, resolved, backendHealthy }
}

/** A payment by its own buyer, authorised until `ledgers` past the fixture's latest ledger. */
const payment = async (seed: number, ledgers = 50) => {
  const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
  const signed = await buildExactPayment(requirements, {
    buyer: seededBuyer(seed),
    validUntilLedger: ledger.latestLedger() + ledgers
  })
  return { signed, body: settleBody(signed, requirements) }
}

const transitions = (r: { history: ReadonlyArray<{ from: string | null; to: string }> }) =>
  r.history.map((h) => [h.from, h.to])

describe("indeterminate settlements resolve themselves from the ledger", () => {
  test("a settle the backend answered 500 is indeterminate, a retry is 409, and once the transfer shows on the ledger it is settled", async () => {
    const { backend, settle, record, indeterminate, resolved } = await setup()
    const { signed, body } = await payment(71)
    const id = await indeterminate(body)
    expect(await record(id)).toMatchObject({ state: "indeterminate", transaction: null })
    expect((await settle(body)).status).toBe(409)

    // The backend did submit it after all: the ledger holds the transfer and the spent nonce.
    const onLedger = settlePayment(ledger, signed, { closedAt: new Date() })
    const after = await resolved(id)
    expect(after).toMatchObject({ state: "settled", transaction: onLedger.hash })
    expect(transitions(after)).toEqual([
      [null, "pending"],
      ["pending", "indeterminate"],
      ["indeterminate", "settled"]
    ])
    expect(after.history[2].reason).toContain(onLedger.hash)
    // The retry now gets the settlement, not 409 forever, and nothing is sent again.
    const retry = await settle(body)
    expect(retry).toMatchObject({
      status: 200,
      body: { success: true, transaction: onLedger.hash, network: "stellar:testnet" }
    })
    expect(backend.calls("/settle")).toBe(1)
  }, 20_000)

  test("a consumed nonce alone settles nothing: without a transfer carrying the authorisation it waits, and once expired it is unpaid", async () => {
    const { indeterminate, resolved, record } = await setup()
    const { signed, body } = await payment(72, 5)
    const id = await indeterminate(body)
    // The payer spent the nonce on something else (the same nonce signed over another call).
    const [nonce] = settlePaymentNonces(signed)
    ledger.consumeNonce(nonce!.address, BigInt(nonce!.nonce), nonce!.expirationLedger)
    await Bun.sleep(600)
    expect((await record(id)).state).toBe("indeterminate")
    ledger.advanceLedgers(10)
    const after = await resolved(id)
    expect(after.state).toBe("failed")
    expect(after.history.at(-1).reason).toContain("never happened")
  }, 20_000)

  test("past the authorisation's expiration with no transfer, the payment provably never happened: failed, released, and a retry reaches a backend once", async () => {
    const { backend, settle, record, indeterminate, resolved, backendHealthy } = await setup()
    const { body } = await payment(73, 5)
    const id = await indeterminate(body)
    const settlesBefore = backend.calls("/settle")
    // Still inside its validity: nothing can be concluded yet.
    await Bun.sleep(600)
    expect((await record(id)).state).toBe("indeterminate")
    ledger.advanceLedgers(10)
    const after = await resolved(id)
    expect(after.state).toBe("failed")
    expect(transitions(after).at(-1)).toEqual(["indeterminate", "failed"])
    expect(after.history.at(-1).reason).toContain("never happened")

    backend.setMode("succeed")
    await backendHealthy()
    const retry = await settle(body)
    expect(retry.status).toBe(200)
    expect(backend.calls("/settle")).toBe(settlesBefore + 1)
    expect((await record(id)).state).toBe("settled")
  }, 20_000)
})

/** The payer's authorisation nonce(s) a signed payload carries, as the reconciler reads them. */
const settlePaymentNonces = (signed: Awaited<ReturnType<typeof buildExactPayment>>) =>
  authNonces(hostCallOf(signed.payload.transaction as string)?.auth ?? [])
