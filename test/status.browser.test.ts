import { afterAll, beforeAll, describe, expect, test } from "bun:test"
import { mkdirSync } from "node:fs"
import { join, resolve } from "node:path"
import { Effect, Option } from "effect"
import type { Browser, Page } from "playwright-core"
import { ResourceId } from "../src/domain/ids.js"
import type { RecordedObservation } from "../src/domain/observations.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import { ResourceReadsRepo } from "../src/store/ResourceReadsRepo.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { startFacilitator } from "./fixtures/facilitator.js"
import { advertised, answeredWithout, observation, timedOut } from "./fixtures/observations.js"
import { buildExactPayment, exactRequirements, seededBuyer, settleBody } from "./fixtures/stellarPayment.js"
import { launchChromium } from "./support/browser.js"
import { runScoped } from "./support/effectTest.js"
import { facilitatorsAnswered, request, startServer, testConfig } from "./support/server.js"

/** Screenshots land here (ignored by git), kept as the run's artefacts. */
const ARTIFACTS = resolve(import.meta.dir, "..", "test-artifacts", "status")
const OTHER_PAYEE = "GDVEU3DD4KOFECV66VIHWEZOYX4ZKR3WV27L464SIIPOU2IUI3JCZA57"
const HOUR = 3_600_000

/** A seller's offer key id as probes record it: a long unbroken word, as real ones are. */
const LONG_KID = `did:jwk:${Buffer.from(JSON.stringify({ kty: "OKP", crv: "Ed25519", x: "q".repeat(43), alg: "EdDSA" })).toString("base64url")}#0`

const entry = (
  id: string,
  provider: string,
  capability: string,
  payTo = advertised.payTo,
  providerName = provider
): CatalogEntry => ({
  resource: {
    id: ResourceId.make(id),
    type: "http",
    // As long as the bundled demo catalog's names.
    name: `${provider} ${capability} (real-world asset data over Horizon and Soroban RPC)`,
    description: "seeded for the status page",
    // Never fetched: probes run only on request here, and the history is recorded directly.
    url: `http://127.0.0.1:9/${id}`,
    method: "GET",
    capabilities: [capability]
  },
  provider: { id: provider.toLowerCase(), name: providerName },
  paymentOptions: [{ ...advertised, payTo }]
})

const CATALOG = [
  entry("alpha.inspect", "Alpha", "rwa.inspect"),
  entry("bravo.compliance", "Bravo", "rwa.compliance", OTHER_PAYEE),
  entry("charlie.inspect", "Charlie", "rwa.inspect", OTHER_PAYEE),
  entry(
    "delta.eligibility",
    "Delta",
    "rwa.eligibility",
    OTHER_PAYEE,
    "Delta Price Raiser (asks more than it advertises after a while)"
  )
]

/** Hours ago, in the middle of an hour bucket, so each lands in its own bucket of the 24 h chart. */
const hoursAgo = (now: number, h: number) => now - (h + 0.5) * HOUR

/** Histories that earn each status: healthy, degraded, offline and quarantined (docs/decisions.md). */
const histories = (now: number): Record<string, ReadonlyArray<RecordedObservation>> => ({
  // 12 healthy probes, one an hour, latencies 100..210 ms.
  // The newest names the key that signed its offers, as a probe's note does.
  "alpha.inspect": Array.from({ length: 12 }, (_, i) =>
    observation(hoursAgo(now, 11 - i), {
      latencyMs: 100 + i * 10,
      ...(i === 11 ? { detail: `offer signed by ${LONG_KID}` } : {})
    })
  ),
  // Half the probes time out, the newest answers: degraded, not offline.
  "bravo.compliance": Array.from({ length: 8 }, (_, i) =>
    i % 2 === 1 ? observation(hoursAgo(now, 7 - i), { payTo: OTHER_PAYEE }) : timedOut(hoursAgo(now, 7 - i))
  ),
  // Healthy once, then three timeouts in a row: offline.
  "charlie.inspect": [
    observation(hoursAgo(now, 4), { payTo: OTHER_PAYEE }),
    ...[3, 2, 1].map((h) => timedOut(hoursAgo(now, h)))
  ],
  // The challenge asks five times the advertised price: quarantined, whatever its availability (3 of 4).
  "delta.eligibility": [
    timedOut(hoursAgo(now, 3)),
    observation(hoursAgo(now, 2), { payTo: OTHER_PAYEE }),
    observation(hoursAgo(now, 1), {
      payTo: OTHER_PAYEE,
      amount: "50000",
      priceUsd: 0.005,
      contradiction: "price 0.005 USD is above the advertised 0.001 USD"
    }),
    answeredWithout(hoursAgo(now, 0.2), 402, { contradiction: null })
  ]
})

const backend = startFacilitator()
let server: Awaited<ReturnType<typeof startServer>>
let browser: Browser
/** The one tab of the file: the npm Chromium runs single-process, so pages are navigated, not opened. */
let tab: Page
/** Every URL any page asked for, across the whole file. */
const requested: Array<string> = []

const seed = (now: number) =>
  Effect.gen(function* () {
    const recorder = yield* EvidenceRecorder
    const repo = yield* ResourceReadsRepo
    for (const [id, observations] of Object.entries(histories(now))) {
      const record = Option.getOrThrow(yield* repo.get(ResourceId.make(id)))
      for (const o of observations)
        yield* recorder.recordObservation(record, { ...o, resourceId: ResourceId.make(id), url: record.resource.url })
    }
  })

const settle = async (seedNumber: number) => {
  const requirements = exactRequirements({ payTo: advertised.payTo })
  const body = settleBody(await buildExactPayment(requirements, { buyer: seededBuyer(seedNumber) }), requirements)
  return request(`${server.url}/x402/settle`, { method: "POST", json: body })
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true })
  server = await startServer(testConfig({ catalog: CATALOG, facilitators: [{ id: "fixture", url: backend.url }] }))
  await runScoped(server.runtime, seed(Date.now()))
  await facilitatorsAnswered(server.url)
  // One settled payment, then one whose settle answers 500: indeterminate, with its reason.
  expect((await settle(91)).status).toBe(200)
  backend.setMode("settle500")
  expect((await settle(92)).status).toBe(502)
  browser = await launchChromium()
  tab = await browser.newPage()
  tab.on("request", (r) => void requested.push(r.url()))
}, 30_000)
afterAll(async () => {
  await browser?.close()
  await server.close()
  await backend.stop()
})

const open = async (path: string, viewport = { width: 1280, height: 800 }): Promise<Page> => {
  await tab.setViewportSize(viewport)
  const response = await tab.goto(`${server.url}${path}`)
  expect(response?.status()).toBe(200)
  return tab
}

const rowIds = (page: Page) =>
  page.locator("table.catalog tbody tr").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-id")))

describe("the status page in a browser", () => {
  test("the catalog table shows every listed resource with its status chip coloured by status", async () => {
    const page = await open("/status")
    expect(await rowIds(page)).toEqual(["alpha.inspect", "bravo.compliance", "charlie.inspect", "delta.eligibility"])
    const chips = await page
      .locator("table.catalog tbody tr td:nth-child(5) .chip")
      .evaluateAll((chips) => chips.map((c) => [c.textContent, getComputedStyle(c).backgroundColor]))
    expect(chips).toEqual([
      ["PAYMENT_VERIFIED", "rgb(209, 242, 219)"],
      ["DEGRADED", "rgb(255, 236, 179)"],
      ["OFFLINE", "rgb(255, 214, 214)"],
      ["QUARANTINED", "rgb(90, 24, 110)"]
    ])
    const alpha = page.locator('tr[data-id="alpha.inspect"] td')
    expect(await alpha.nth(0).textContent()).toBe("Alpha")
    expect(await alpha.nth(3).textContent()).toBe("$0.0010")
    expect(await alpha.nth(6).textContent()).toBe("100.0%")
    expect(await alpha.nth(7).textContent()).toBe("210 ms")
    await page.screenshot({ path: join(ARTIFACTS, "status-1280x800.png"), fullPage: true })
  })

  test("sorting by a column and filtering by status and capability change the rows", async () => {
    const page = await open("/status")
    await page.click('th[data-sort="availability"] a')
    expect(await rowIds(page)).toEqual(["charlie.inspect", "bravo.compliance", "delta.eligibility", "alpha.inspect"])
    await page.click('th[data-sort="availability"] a')
    expect(await rowIds(page)).toEqual(["alpha.inspect", "delta.eligibility", "bravo.compliance", "charlie.inspect"])
    await page.click('th[data-sort="resource"] a')
    await page.click('th[data-sort="resource"] a')
    expect(await rowIds(page)).toEqual(["delta.eligibility", "charlie.inspect", "bravo.compliance", "alpha.inspect"])

    await page.selectOption('select[name="status"]', "OFFLINE")
    await Promise.all([page.waitForURL(/status=OFFLINE/), page.click("form.filters button")])
    expect(await rowIds(page)).toEqual(["charlie.inspect"])

    await page.selectOption('select[name="status"]', "")
    await page.selectOption('select[name="capability"]', "rwa.inspect")
    await Promise.all([page.waitForURL(/capability=rwa.inspect/), page.click("form.filters button")])
    // The descending sort by resource name survives the filter.
    expect(await rowIds(page)).toEqual(["charlie.inspect", "alpha.inspect"])
  })

  test("a resource page plots one point per hour that had probes, and lists its transitions and observations", async () => {
    const page = await open("/status/resources/alpha.inspect")
    const points = (series: string) => page.locator(`svg.chart circle.point[data-series="${series}"]`).count()
    expect(await points("availability")).toBe(12)
    expect(await points("p50")).toBe(12)
    expect(await points("p95")).toBe(12)
    expect(await points("observed-price")).toBe(12)
    expect(await page.locator("svg.chart line.reference").count()).toBe(1)
    expect(await page.locator("ol.timeline li").count()).toBeGreaterThan(0)
    expect(await page.locator("table.observations tbody tr").count()).toBe(12)
    await page.screenshot({ path: join(ARTIFACTS, "resource-1280x800.png"), fullPage: true })

    const degraded = await open("/status/resources/bravo.compliance")
    // 8 probes in 8 hours; only the 4 answered ones have a latency.
    expect(await degraded.locator('circle.point[data-series="availability"]').count()).toBe(8)
    expect(await degraded.locator('circle.point[data-series="p95"]').count()).toBe(4)
  })

  test("facilitators and the settlement journal, indeterminate entries first with their reasons", async () => {
    const page = await open("/status")
    // One settle answered 500 leaves the backend healthy (the breaker needs a streak); the page shows the error.
    const backendRow = page.locator('table.facilitators tr[data-backend="fixture"]')
    expect(await backendRow.locator(".chip").textContent()).toBe("healthy")
    expect(await backendRow.textContent()).toContain("answered 500")
    expect(await page.locator('[data-count="settled"]').textContent()).toContain("1")
    expect(await page.locator('[data-count="indeterminate"]').textContent()).toContain("1")
    const firstJournalRow = page.locator("#journal table.journal tbody tr").first()
    expect(await firstJournalRow.getAttribute("data-state")).toBe("indeterminate")
    expect(await firstJournalRow.textContent()).toContain("fixture")
  })

  test("readable on a 390-wide phone: the table scrolls inside its box, the charts fit the screen", async () => {
    const phone = { width: 390, height: 844 }
    const page = await open("/status", phone)
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    await page.screenshot({ path: join(ARTIFACTS, "status-390.png"), fullPage: true })
    const resource = await open("/status/resources/alpha.inspect", phone)
    expect(await resource.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390)
    const chartWidth = await resource
      .locator("svg.chart")
      .first()
      .evaluate((svg) => svg.getBoundingClientRect().width)
    expect(chartWidth).toBeGreaterThan(300)
    expect(chartWidth).toBeLessThanOrEqual(390)
    await resource.screenshot({ path: join(ARTIFACTS, "resource-390.png"), fullPage: true })
  })

  test("no page asked any host but the service", () => {
    expect(requested.length).toBeGreaterThan(0)
    const origin = new URL(server.url).origin
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([])
  })
})

/**
 * Every box on the page that sticks out of its card (a `section`) or out of the viewport, and every
 * chart label that sticks out of its chart (an SVG clips it: `$0.00057` read `0.00057`), described
 * for the failure message. Run in the page; with `scrollingTables`, boxes inside a table that scrolls
 * inside its card (a phone's) are left out.
 */
const overflowing = (scrollingTables: boolean) => {
  const describe = (el: Element) =>
    `${el.tagName.toLowerCase()}${el.getAttribute("class") ? `.${el.getAttribute("class")!.split(" ").join(".")}` : ""} "${(el.textContent ?? "").trim().slice(0, 30)}"`
  const viewport = document.documentElement.clientWidth
  const found: Array<string> = []
  for (const card of Array.from(document.querySelectorAll("section"))) {
    const c = card.getBoundingClientRect()
    for (const el of Array.from(card.querySelectorAll("*"))) {
      const r = el.getBoundingClientRect()
      if (r.width === 0 && r.height === 0) continue
      // On a phone a table scrolls sideways inside its card: only what is outside such a box counts.
      if (scrollingTables && el.closest(".scroll") !== null) continue
      if (r.left < c.left - 0.5 || r.right > c.right + 0.5)
        found.push(
          `${describe(el)} leaves its card (${Math.round(r.left)}-${Math.round(r.right)} in ${Math.round(c.left)}-${Math.round(c.right)})`
        )
      else if (r.right > viewport + 0.5)
        found.push(`${describe(el)} leaves the viewport (${Math.round(r.right)} > ${viewport})`)
    }
  }
  for (const svg of Array.from(document.querySelectorAll("svg.chart"))) {
    const s = svg.getBoundingClientRect()
    for (const label of Array.from(svg.querySelectorAll("text"))) {
      const r = label.getBoundingClientRect()
      if (r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5)
        found.push(`chart label ${describe(label)} is cut by its chart`)
    }
  }
  if (document.documentElement.scrollWidth > viewport)
    found.push(`the page scrolls sideways (${document.documentElement.scrollWidth} > ${viewport})`)
  return found
}

describe("the status page fits screens from 1280 to 1920 wide", () => {
  for (const width of [1280, 1920]) {
    test(`at ${width} px every catalog column is on screen and nothing leaves its card`, async () => {
      const page = await open("/status", { width, height: 900 })
      const headers = await page.locator("table.catalog thead th").evaluateAll((ths) =>
        ths.map((th) => ({
          label: th.textContent?.replace(/[▲▼]/g, "").trim(),
          right: th.getBoundingClientRect().right
        }))
      )
      expect(headers.map((h) => h.label)).toEqual([
        "Provider",
        "Resource",
        "Capability",
        "Price (worst case)",
        "Status",
        "Level",
        "Availability",
        "p95 latency",
        "Confidence",
        "Last verified"
      ])
      for (const h of headers) expect(h.right).toBeLessThanOrEqual(width)
      expect(await page.evaluate(overflowing, false)).toEqual([])
      await page.screenshot({ path: join(ARTIFACTS, `status-${width}.png`), fullPage: true })
    })

    test(`at ${width} px a resource page keeps its notes, keys and chart labels inside their boxes`, async () => {
      const page = await open("/status/resources/alpha.inspect", { width, height: 900 })
      expect(await page.evaluate(overflowing, false)).toEqual([])
      // The whole key stays one click away: shortened, with the full value in the title and the opened details.
      const key = page.locator("table.observations details.long").first()
      expect(await key.locator("summary").getAttribute("title")).toBe(LONG_KID)
      await key.locator("summary").click()
      expect(await key.locator("code").textContent()).toBe(LONG_KID)
      expect(await page.evaluate(overflowing, false)).toEqual([])
      await page.screenshot({ path: join(ARTIFACTS, `resource-${width}.png`), fullPage: true })
    })
  }

  test("on a 390-wide phone the pages keep their boxes inside their cards, tables scrolling inside theirs", async () => {
    for (const path of ["/status", "/status/resources/alpha.inspect"]) {
      const page = await open(path, { width: 390, height: 844 })
      expect(await page.evaluate(overflowing, true)).toEqual([])
    }
  })

  test("these pages too asked no host but the service", () => {
    const origin = new URL(server.url).origin
    expect(requested.filter((url) => new URL(url).origin !== origin)).toEqual([])
  })
})
