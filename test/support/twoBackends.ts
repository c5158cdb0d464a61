import { expect } from "bun:test"
import type { Config } from "../../src/config.js"
import { startFacilitator } from "../fixtures/facilitator.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "../fixtures/stellarPayment.js"
import { entry } from "../fixtures/verificationStack.js"
import { FIXTURE_PAY_TO } from "../fixtures/x402Resource.js"
import type { sharedLedgerAndSeller } from "./ledgerSeller.js"
import { facilitatorsAnswered, ledgerAt, request, startServer, testConfig } from "./server.js"

type Shared = ReturnType<typeof sharedLedgerAndSeller>

/**
 * A service with two fixture facilitators settling on the shared fixture ledger, A first, and a
 * probed payee (settlement pays only a payee with evidence). `configure` adjusts its config.
 */
export const twoBackendService = async (
  { ledger, running, seller }: Shared,
  configure: (config: Config) => Config = (c) => c
) => {
  const a = startFacilitator({ ledger })
  const b = startFacilitator({ ledger })
  const base = testConfig()
  const server = await startServer(
    configure(
      testConfig({
        facilitators: [
          { id: "a", url: a.url },
          { id: "b", url: b.url }
        ],
        facilitatorPollSeconds: 0.3,
        catalog: [entry("fixture.paid", seller().url("/paid"))],
        probes: { ...base.probes, allowPrivateTargets: true },
        ledger: { ...ledgerAt(ledger), timeoutMs: 1000 }
      })
    )
  )
  running.push(server, { close: async () => void (await Promise.all([a.stop(), b.stop()])) })
  await facilitatorsAnswered(server.url)
  expect(
    (await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: "fixture.paid" } })).body.outcome
  ).toBe("healthy")
  const settle = (body: unknown) => request(`${server.url}/x402/settle`, { method: "POST", json: body })
  const record = async (id: string) => (await request(`${server.url}/x402/settlements/${id}`)).body
  const journal = async () =>
    (await request(`${server.url}/x402/settlements`)).body.settlements as Array<Record<string, unknown>>
  return { a, b, server, settle, record, journal }
}

/** A payment to the fixture payee by its own buyer, authorised until `ledgers` past the ledger's latest. */
export const ledgerPayment = async ({ ledger }: Shared, seed: number, ledgers = 50) => {
  const requirements = exactRequirements({ payTo: FIXTURE_PAY_TO })
  const signed = await buildExactPayment(requirements, {
    buyer: seededBuyer(seed),
    validUntilLedger: ledger.latestLedger() + ledgers
  })
  return { signed, payer: seededBuyer(seed).publicKey(), body: settleBody(signed, requirements) }
}
