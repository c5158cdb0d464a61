import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, ManagedRuntime } from "effect"
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
import { pollUntil } from "./support/poll.js"
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

/** The service graph as `serve` builds it (ledger confirmation running), on the folder's SQLite file. */
const servicesOn = (config: Config) => ManagedRuntime.make(ServicesLive(config, "server"))

const cycle = (runtime: ReturnType<typeof servicesOn>) =>
  runtime.runPromise(Effect.flatMap(EconomicProber, (p) => p.runCycle))
const detail = (runtime: ReturnType<typeof servicesOn>) =>
  runtime.runPromise(Effect.flatMap(Discovery, (d) => d.get(ResourceId.make("seller.paid"))))

describe("economic probes", () => {
  test("the probe pays once through the seller's facilitator, the ledger confirms it, and the daily budget holds across a restart", async () => {
    const folder = mkdtempSync(join(tmpdir(), "sextant-economic-"))
    const config = configFor(folder)
    const first = servicesOn(config)
    // An ordinary probe first: the operator's policy wants current evidence of a payment interface.
    const probed = await first.runPromise(
      Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("seller.paid")))
    )
    expect(probed.status).toBe("PAYMENT_VERIFIED")

    const report = await cycle(first)
    expect(report.paid).toEqual<unknown>([
      { resourceId: "seller.paid", transaction: expect.stringMatching(/^[0-9a-f]{64}$/), success: true }
    ])
    expect(facilitator.calls("/settle")).toBe(1)
    // The probe signed what simulation on a Protocol 28 network records: ADDRESS_V2.
    expect(settledCredentialForms(facilitator.requests)).toEqual(["addressV2"])
    expect(statSync(join(folder, "probe.key")).mode & 0o777).toBe(0o600)

    const confirmed = await pollUntil(
      "the probe's payment is confirmed on the ledger",
      () => detail(first),
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
    expect(await cycle(first)).toMatchObject({ paid: [], overBudget: ["seller.paid"] })
    await first.dispose()

    // A restart on the same store keeps the day's spend.
    const second = servicesOn(config)
    expect(await cycle(second)).toMatchObject({ paid: [], overBudget: ["seller.paid"] })
    expect(facilitator.calls("/settle")).toBe(1)
    await second.dispose()
  }, 30_000)

  test("nothing is paid for a resource the operator's policy refuses, or one priced over maxPriceUsd", async () => {
    const settles = facilitator.calls("/settle")
    const refusals = [
      { economic: { policy: { denyProviders: ["seller"] } }, code: "PROVIDER_DENIED" },
      { economic: { maxPriceUsd: 0.0005 }, code: "PRICE_EXCEEDS_LIMIT" }
    ]
    for (const { economic, code } of refusals) {
      const runtime = servicesOn(configFor(mkdtempSync(join(tmpdir(), "sextant-economic-")), economic))
      await runtime.runPromise(Effect.flatMap(Prober, (p) => p.probeResource(ResourceId.make("seller.paid"))))
      const report = await cycle(runtime)
      expect(report.paid).toEqual([])
      expect(report.skipped[0]?.reason).toContain(`does not allow it (${code})`)
      await runtime.dispose()
    }
    // And one never probed has no current evidence to satisfy the policy with.
    const unprobed = servicesOn(configFor(mkdtempSync(join(tmpdir(), "sextant-economic-"))))
    expect((await cycle(unprobed)).skipped[0]?.reason).toContain("NO_VERIFICATION_EVIDENCE")
    await unprobed.dispose()
    expect(facilitator.calls("/settle")).toBe(settles)
  }, 30_000)
})
