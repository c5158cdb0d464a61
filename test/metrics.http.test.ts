import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { TESTNET_USDC } from "../src/config.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { pollUntil } from "./support/poll.js"
import { parseExposition } from "./support/prometheus.js"
import { SELLER_PAY_TO as PAY_TO, SELLER_RESOURCE_ID as RESOURCE_ID, startSellerStack } from "./support/sellerStack.js"
import { request, testConfig } from "./support/server.js"

let stack: Awaited<ReturnType<typeof startSellerStack>>
let server: Awaited<ReturnType<typeof startSellerStack>>["server"]

beforeAll(async () => {
  // One sponsored fee per principal in the window: a buyer's second settle is 429.
  // One buyer's payment lifts the resource here (trust.level3.test.ts covers the distinct-payer threshold).
  stack = await startSellerStack((base) => ({
    budgets: { ...base.budgets, feeCeilingStroops: 1_000, perPrincipalFeeStroops: 1_000 },
    verification: { ...base.verification, minDistinctPayers: 1 }
  }))
  server = stack.server
})
afterAll(() => stack.stop())

/** Scrapes `/metrics` and parses it with an independent exposition parser, which throws on a malformed exposition. */
const scrape = async () => {
  const response = await fetch(`${server.url}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get("content-type")).toContain("text/plain; version=0.0.4")
  const text = await response.text()
  const families = await parseExposition(text)
  const samples = families.flatMap((f) => f.samples)
  /** The sum of the samples named `name` whose labels include `labels` (`_count` for a histogram's observations); 0 when none. */
  const value = (name: string, labels: Record<string, string> = {}) =>
    samples
      .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
      .reduce((sum, s) => sum + s.value, 0)
  const series = (name: string) => samples.filter((s) => s.name === name)
  return { text, families, value, series }
}

const payment = async (seed: number, extras: Parameters<typeof settleBody>[2] = {}) => {
  const requirements = exactRequirements({ payTo: PAY_TO })
  return settleBody(await buildExactPayment(requirements, { buyer: seededBuyer(seed) }), requirements, extras)
}
const settle = (body: unknown) => request(`${server.url}/x402/settle`, { method: "POST", json: body })

describe("GET /metrics", () => {
  test("parses as the Prometheus text format, every family typed and documented, no id, address or URL as a label", async () => {
    const { families, text } = await scrape()
    const names = families.map((f) => f.name)
    for (const expected of [
      "sextant_probes_total",
      "sextant_probe_duration_seconds",
      "sextant_catalog_resources",
      "sextant_settle_requests_total",
      "sextant_settle_duration_seconds",
      "sextant_facilitator_calls_total",
      "sextant_facilitator_backend_healthy",
      "sextant_fee_budget_used_stroops",
      "sextant_fee_budget_remaining_stroops",
      "sextant_spend_window_used_usd",
      "sextant_settlement_journal_entries",
      "sextant_receipts_issued_total",
      "sextant_http_requests_total",
      "sextant_http_request_duration_seconds"
    ]) {
      expect(names).toContain(expected)
    }
    for (const family of families) expect(family.help.length).toBeGreaterThan(0)
    expect(text).not.toContain(PAY_TO)
    expect(text).not.toContain(RESOURCE_ID)
    expect(text).not.toContain("127.0.0.1")
  })

  test("counters move with a probe, settles answered 200, 403 and 429, and a receipt", async () => {
    const before = await scrape()

    const probe = await request(`${server.url}/v1/validate`, { method: "POST", json: { resourceId: RESOURCE_ID } })
    expect(probe.body.healthy).toBe(true)

    const settled = await settle(await payment(71))
    expect(settled.status).toBe(200)
    expect(settled.body.success).toBe(true)
    const denied = await settle(await payment(72, { servicePolicy: { maxPricePerRequestUsd: 0.0001 } }))
    expect(denied.status).toBe(403)
    expect(denied.body.error).toBe("POLICY_DENIED")
    const exhausted = await settle(await payment(71))
    expect(exhausted.status).toBe(429)
    expect(exhausted.body.error).toBe("FEE_BUDGET_EXHAUSTED")

    const receipt = await request(`${server.url}/v1/receipts`, {
      method: "POST",
      json: {
        request: { capability: "rwa.inspect", optimizeFor: "cheapest" },
        payment: {
          network: "stellar:testnet",
          scheme: "exact",
          asset: TESTNET_USDC,
          amount: "10000",
          transactionHash: settled.body.transaction
        },
        response: { status: 200, body: "{}" }
      }
    })
    expect(receipt.status).toBe(200)

    // The settled payment lands on the fixture ledger; once the confirmer confirmed it, its resource is at level 3.
    await pollUntil(
      "the settled payment is confirmed on the ledger",
      () => request(`${server.url}/v1/resources/${RESOURCE_ID}`),
      (r) => r.body.economicEvidence?.some((e: { state: string }) => e.state === "confirmed") === true
    )
    const after = await scrape()
    const moved = (name: string, labels: Record<string, string> = {}) =>
      after.value(name, labels) - before.value(name, labels)
    expect(moved("sextant_probes_total", { outcome: "healthy" })).toBe(1)
    expect(moved("sextant_probe_duration_seconds_count")).toBe(1)
    expect(moved("sextant_settle_requests_total", { result: "settled", code: "OK" })).toBe(1)
    expect(moved("sextant_settle_requests_total", { result: "refused", code: "POLICY_DENIED" })).toBe(1)
    expect(moved("sextant_settle_requests_total", { result: "refused", code: "FEE_BUDGET_EXHAUSTED" })).toBe(1)
    expect(moved("sextant_settle_duration_seconds_count", { result: "refused" })).toBe(2)
    expect(moved("sextant_facilitator_calls_total", { backend: "fixture", call: "settle", result: "ok" })).toBe(1)
    expect(moved("sextant_receipts_issued_total")).toBe(1)
    for (const status of ["200", "403", "429"]) {
      expect(moved("sextant_http_requests_total", { method: "POST", route: "/x402/settle", status })).toBe(1)
    }
    expect(moved("sextant_http_requests_total", { method: "POST", route: "/v1/validate", status: "200" })).toBe(1)
    expect(
      after.value("sextant_http_requests_total", { method: "GET", route: "/metrics", status: "200" })
    ).toBeGreaterThanOrEqual(1)

    // State gauges, read from the store and the pool at scrape time.
    expect(after.value("sextant_settlement_journal_entries", { state: "settled" })).toBe(1)
    expect(after.value("sextant_settlement_journal_entries", { state: "indeterminate" })).toBe(0)
    expect(after.value("sextant_fee_budget_used_stroops")).toBe(1_000)
    expect(after.value("sextant_fee_budget_remaining_stroops")).toBe(testConfig().budgets.globalFeeStroops - 1_000)
    expect(after.value("sextant_spend_window_used_usd")).toBeCloseTo(0.001, 9)
    expect(after.value("sextant_facilitator_backend_healthy", { backend: "fixture" })).toBe(1)
    const catalog = after.series("sextant_catalog_resources")
    expect(catalog.map((s) => [s.labels, s.value])).toEqual([[{ status: "TRANSACTION_VERIFIED", level: "3" }, 1]])
  })

  test("a path with an id is labelled by its route template, an unknown path as unmatched", async () => {
    const before = await scrape()
    await fetch(`${server.url}/v1/resources/${RESOURCE_ID}`)
    await fetch(`${server.url}/v1/resources/some-other-id`)
    await fetch(`${server.url}/no/such/path`)
    const { value, text } = await scrape()
    const moved = (labels: Record<string, string>) =>
      value("sextant_http_requests_total", labels) - before.value("sextant_http_requests_total", labels)
    expect(moved({ route: "/v1/resources/:id", status: "200" })).toBe(1)
    expect(moved({ route: "/v1/resources/:id", status: "404" })).toBe(1)
    expect(moved({ route: "unmatched", status: "404" })).toBe(1)
    expect(text).not.toContain("some-other-id")
  })
})
