import { afterAll, beforeAll, describe, expect } from "bun:test"
import { mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { ServicesLive } from "../src/app.js"
import type { Config } from "../src/config.js"
import { Discovery } from "../src/discovery/Discovery.js"
import { ResourceId } from "../src/domain/ids.js"
import { EconomicProber } from "../src/economic/EconomicProber.js"
import { Prober } from "../src/verification/Prober.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { startFixtureLedger } from "./fixtures/ledger.js"
import { startPaidResource } from "./fixtures/paidResource.js"
import { settledCredentialForms } from "./fixtures/stellarPayment.js"
import { it } from "./support/effectTest.js"
import { pollUntilEffect } from "./support/poll.js"
import { ledgerAt, testConfig } from "./support/server.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const ledger = startFixtureLedger()
const facilitator = startFacilitator({ ledger })
const seller = startPaidResource({ payTo: PAY_TO, amount: "10000" })

beforeAll(async () => {
  await seller.useFacilitator(facilitator.url)
})
afterAll(async () => {
  await seller.stop()
  await facilitator.stop()
  ledger.stop()
})

const configFor = (folder: string, economic: Partial<Config["economicProbes"]> = {}): Config => {
  const base = testConfig()
  return testConfig({
    database: join(folder, "sextant.db"),
    signer: { ed25519KeyFile: join(folder, "signer.key") },
    catalog: [seller.catalogEntry("seller.paid")],
    probes: { ...base.probes, allowPrivateTargets: true },
    ledger: ledgerAt(ledger),
    economicProbes: {
      ...base.economicProbes,
      enabled: true,
      payerKeyFile: join(folder, "probe.key"),
      maxPriceUsd: 0.01,
      // Room for one probe at 0.001 USD a day.
      budgetUsdPerDay: 0.0015,
      minObservations: 1,
      ...economic
    }
  })
}

/**
 * Runs `effect` on the service graph as `serve` builds it (ledger confirmation running), on the
 * folder's SQLite file; the graph is released when it ends, as a stopped service would be.
 */
const servicesOn =
  (config: Config) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.provide(effect, ServicesLive(config, "server"))

const cycle = Effect.flatMap(EconomicProber, (p) => p.runCycle)
const detail = Effect.flatMap(Discovery, (d) => d.get(ResourceId.make("seller.paid")))
const probe = Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("seller.paid")))

describe("economic probes", () => {
  it.live(
    "the probe pays once through the seller's facilitator, the ledger confirms it, and the daily budget holds across a restart",
    () =>
      Effect.gen(function* () {
        const folder = mkdtempSync(join(tmpdir(), "sextant-economic-"))
        const config = configFor(folder)
        yield* servicesOn(config)(
          Effect.gen(function* () {
            // An ordinary probe first: the operator's policy wants current evidence of a payment interface.
            const probed = yield* probe
            expect(probed.status).toBe("PAYMENT_VERIFIED")

            const report = yield* cycle
            expect(report.paid).toEqual<unknown>([
              { resourceId: "seller.paid", transaction: expect.stringMatching(/^[0-9a-f]{64}$/), success: true }
            ])
            expect(facilitator.calls("/settle")).toBe(1)
            // The probe signed what simulation on a Protocol 28 network records: ADDRESS_V2.
            expect(settledCredentialForms(facilitator.requests)).toEqual(["addressV2"])
            expect(statSync(join(folder, "probe.key")).mode & 0o777).toBe(0o600)

            const confirmed = yield* pollUntilEffect(
              "the probe's payment is confirmed on the ledger",
              Effect.orDie(detail),
              (d) => d.economicEvidence[0]?.state === "confirmed"
            )
            expect(confirmed.economicEvidence[0]).toMatchObject({
              source: "probe",
              transactionHash: report.paid[0]?.transaction,
              payTo: PAY_TO,
              probe: { priceUsd: 0.001, httpStatus: 200, bodyMatchesType: true }
            })
            expect(confirmed.economicEvidence[0]?.probe?.settleLatencyMs).toBeGreaterThanOrEqual(0)
            expect(confirmed.resource).toMatchObject({ status: "TRANSACTION_VERIFIED", verificationLevel: 3 })
            expect(confirmed.metrics.transactionSuccessRate).toBe(1)

            // The day's budget is spent: the next cycle pays nothing.
            expect(yield* cycle).toMatchObject({ paid: [], overBudget: ["seller.paid"] })
          })
        )

        // A restart on the same store keeps the day's spend.
        expect(yield* servicesOn(config)(cycle)).toMatchObject({ paid: [], overBudget: ["seller.paid"] })
        expect(facilitator.calls("/settle")).toBe(1)
      }),
    30_000
  )

  it.live(
    "nothing is paid for a resource the operator's policy refuses, or one priced over maxPriceUsd",
    () =>
      Effect.gen(function* () {
        const settles = facilitator.calls("/settle")
        const refusals = [
          { economic: { policy: { denyProviders: ["seller"] } }, code: "PROVIDER_DENIED" },
          { economic: { maxPriceUsd: 0.0005 }, code: "PRICE_EXCEEDS_LIMIT" }
        ]
        for (const { economic, code } of refusals) {
          const report = yield* servicesOn(configFor(mkdtempSync(join(tmpdir(), "sextant-economic-")), economic))(
            Effect.zipRight(probe, cycle)
          )
          expect(report.paid).toEqual([])
          expect(report.skipped[0]?.reason).toContain(`does not allow it (${code})`)
        }
        // And one never probed has no current evidence to satisfy the policy with.
        const unprobed = yield* servicesOn(configFor(mkdtempSync(join(tmpdir(), "sextant-economic-"))))(cycle)
        expect(unprobed.skipped[0]?.reason).toContain("NO_VERIFICATION_EVIDENCE")
        expect(facilitator.calls("/settle")).toBe(settles)
      }),
    30_000
  )
})
