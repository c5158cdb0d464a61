import { describe, expect, test } from "bun:test"
import { FIXTURE_PAY_TO } from "./fixtures/x402Resource.js"
import { embeddedEntry, feeKeyFile } from "./support/embeddedFacilitator.js"
import { sharedLedgerAndSeller } from "./support/ledgerSeller.js"
import { pollUntil } from "./support/poll.js"
import { request } from "./support/server.js"
import { ledgerPayment, twoBackendService } from "./support/twoBackends.js"

/**
 * The fee account's balance against its floor: read after settles and on the schedule an operator
 * turns on; below the floor the embedded backend is unhealthy with that reason, everywhere an
 * operator looks, and settles move to the next backend.
 */
const shared = sharedLedgerAndSeller()
const { ledger } = shared

describe("the embedded facilitator's fee account floor", () => {
  test("on a balance schedule: below the floor it is unhealthy in /x402/facilitators, /health/dependencies, /status and /metrics; settles go to the HTTP backend", async () => {
    const fee = feeKeyFile(93)
    ledger.network.setAccount(fee.keypair.publicKey(), { sequence: 10n, balance: 200_000_000n })
    const { b, server, settle } = await twoBackendService(shared, (config) => ({
      ...config,
      facilitators: [
        embeddedEntry(fee.path, { id: "embedded", channels: 1, minFeeBalanceXlm: 50, balanceCheckSeconds: 0.2 }),
        config.facilitators[1]!
      ]
    }))
    const embedded = async () =>
      (await request(`${server.url}/x402/facilitators`)).body.facilitators.find(
        (f: { id: string }) => f.id === "embedded"
      )
    const unhealthy = await pollUntil(
      "the balance schedule read the fee account",
      embedded,
      (f) => f.embedded.feeBalanceStroops !== null,
      { timeoutMs: 5000, everyMs: 50 }
    )
    expect(unhealthy).toMatchObject({
      healthy: false,
      embedded: { feeBalanceStroops: "200000000", minFeeBalanceStroops: "500000000" }
    })
    expect(unhealthy.lastError).toContain("below the floor")

    const dependencies = (await request(`${server.url}/health/dependencies`)).body
    expect(JSON.stringify(dependencies)).toContain("below the floor")
    const status = await (await fetch(`${server.url}/status`)).text()
    expect(status).toContain("below the floor")
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toContain('sextant_embedded_fee_account_balance_stroops{backend="embedded"} 200000000')

    const { payer, body } = await ledgerPayment(shared, 121, 10)
    const answer = await settle(body)
    expect(answer.body).toMatchObject({ success: true, payer })
    expect(b.calls("/settle")).toBe(1)
    expect(ledger.transfersBetween(payer, FIXTURE_PAY_TO)).toBe(1)
  }, 30_000)

  test("without a schedule it reads the balance only after a settle: healthy until then, unhealthy once the read after a settle finds it below the floor", async () => {
    const fee = feeKeyFile(94)
    ledger.network.setAccount(fee.keypair.publicKey(), { sequence: 10n, balance: 600_000_000n })
    const { server, settle } = await twoBackendService(shared, (config) => ({
      ...config,
      facilitators: [embeddedEntry(fee.path, { id: "embedded", channels: 0, minFeeBalanceXlm: 50 })]
    }))
    const embedded = async () => (await request(`${server.url}/x402/facilitators`)).body.facilitators[0]
    expect(await embedded()).toMatchObject({ healthy: true, embedded: { feeBalanceStroops: null } })
    // No schedule of its own: nothing reads the fee account while no payment is settled.
    await Bun.sleep(300)
    expect(await embedded()).toMatchObject({ healthy: true, embedded: { feeBalanceStroops: null } })
    ledger.network.setAccount(fee.keypair.publicKey(), { sequence: 10n, balance: 400_000_000n })
    const { body } = await ledgerPayment(shared, 122, 10)
    expect((await settle(body)).body).toMatchObject({ success: true })
    const after = await pollUntil(
      "the settle read the balance",
      embedded,
      (f) => f.embedded.feeBalanceStroops !== null,
      { timeoutMs: 5000, everyMs: 50 }
    )
    expect(after.healthy).toBe(false)
    expect(after.embedded.settles.settled).toBe(1)
  }, 30_000)
})
