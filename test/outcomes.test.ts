import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Option } from "effect"
import { TESTNET_USDC } from "../src/config.js"
import { ResourceId } from "../src/domain/ids.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { option, payee, record } from "./fixtures/evidence.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { observation } from "./fixtures/observations.js"
import { it, runScoped } from "./support/effectTest.js"
import { pollUntil } from "./support/poll.js"
import { ledgerAt, refusal, request, startServer, testConfig } from "./support/server.js"

/**
 * Buyers' outcome reports against a fixture ledger: only a transaction the ledger shows paying the
 * entry's payee at least its price is taken, once; anything else is refused and moves nothing.
 */
const ledger = startFixtureLedger()
const alpha = record("alpha.inspect", [option({ amount: "10000", amountUsd: 0.001, payTo: payee(1) })])
const url = alpha.resource.url
const buyer = () => Keypair.random().publicKey()
const pay = (to: string, amount: bigint, successful = true) =>
  ledger.addTransaction({ transfer: { contract: TESTNET_USDC, from: buyer(), to, amount }, successful })

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  const base = testConfig()
  server = await startServer(
    testConfig({
      catalog: [alpha],
      ledger: ledgerAt(ledger),
      verification: { ...base.verification, minDistinctPayers: 1 }
    })
  )
  // One probe saw alpha's challenge: payments can only lift a resource that has a standing.
  await runScoped(
    server.runtime,
    Effect.gen(function* () {
      const entry = Option.getOrThrow(yield* Effect.flatMap(ResourceReadsRepo, (repo) => repo.get(alpha.resource.id)))
      yield* (yield* EvidenceRecorder).recordObservation(
        entry,
        observation(Date.now() - 60_000, { resourceId: entry.resource.id, url, payTo: payee(1) })
      )
    })
  )
})
afterAll(async () => {
  await server.close()
  ledger.stop()
})

const report = (
  transactionHash: string,
  outcome: "settled" | "refused" | "delivered" | "not_delivered" = "delivered",
  at = url
) => server.client.preflight.outcome({ payload: { url: at, outcome, transactionHash } })
const detail = () => it.run(server.client.resources.get({ path: { id: ResourceId.make("alpha.inspect") } }))
const outcomesShown = async () => (await detail()).economicEvidence.filter((e) => e.source === "outcome")

describe("POST /v1/preflight/outcomes", () => {
  test("a report the ledger refutes is refused 422 and stores nothing", async () => {
    const elsewhere = pay(payee(2), 10_000n)
    const tooLittle = pay(payee(1), 9_999n)
    const failed = pay(payee(1), 10_000n, false)
    const unknown = "ab".repeat(32)
    for (const hash of [elsewhere, tooLittle, failed, unknown]) {
      const refused = await refusal(report(hash))
      expect(refused).toMatchObject({ error: "TRANSACTION_NOT_CONFIRMED" })
    }
    expect((await refusal(report(elsewhere))).message).toContain(`to ${payee(2)}`)
    expect((await refusal(report(unknown))).message).toContain("not on the ledger")
    expect(await outcomesShown()).toEqual([])
    const unchanged = await detail()
    expect(unchanged.metrics.transactionSuccessRate).toBe(0)
  })

  test("a confirmed delivered report counts once as a buyer payment; a repeat is not stored again", async () => {
    const hash = pay(payee(1), 10_000n)
    const first = await it.run(report(hash))
    expect(first).toMatchObject({
      resourceId: "alpha.inspect",
      recorded: true,
      evidence: { source: "outcome", state: "pending", transactionHash: hash }
    })
    const confirmed = await pollUntil("the outcome is confirmed on the ledger", detail, (d) =>
      d.economicEvidence.some((e) => e.source === "outcome" && e.state === "confirmed")
    )
    expect(confirmed.metrics.transactionSuccessRate).toBe(1)
    expect(confirmed.resource.verificationLevel).toBe(3)

    const again = await it.run(report(hash, "settled"))
    expect(again).toMatchObject({ recorded: false, evidence: { id: first.evidence.id, state: "confirmed" } })
    expect((await outcomesShown()).map((e) => e.transactionHash)).toEqual([hash])
  })

  test("a not-delivered report on a paid transaction is shown and moves nothing", async () => {
    const before = await detail()
    const hash = pay(payee(1), 10_000n)
    const answer = await it.run(report(hash, "not_delivered"))
    expect(answer).toMatchObject({
      recorded: true,
      evidence: { state: "rejected", reason: expect.stringContaining("not_delivered") }
    })
    const after = await detail()
    expect(after.metrics.transactionSuccessRate).toBe(before.metrics.transactionSuccessRate)
    expect((await outcomesShown()).find((e) => e.transactionHash === hash)?.state).toBe("rejected")
  })

  test("a URL outside the catalog is 404; a malformed hash is 400", async () => {
    const hash = pay(payee(1), 10_000n)
    expect(await refusal(report(hash, "delivered", "http://127.0.0.1:1/nowhere"))).toMatchObject({ error: "NOT_FOUND" })
    // Raw: a malformed hash breaks the contract.
    const bad = await request(`${server.url}/v1/preflight/outcomes`, {
      method: "POST",
      json: { url, outcome: "delivered", transactionHash: "xyz" }
    })
    expect(bad.status).toBe(400)
    expect(bad.body).toMatchObject({ error: "INVALID_REQUEST" })
  })
})
