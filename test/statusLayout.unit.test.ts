import { describe, expect, test } from "bun:test"
import { leftPad, lineChart } from "../src/status/charts.js"
import { longValue, withLongValues } from "../src/status/html.js"
import { embeddedLine, facilitatorsSection, formatXlm } from "../src/status/operations.js"

/** The status page's layout rules that need no browser (test/status.browser.test.ts measures the rest). */

const KEY = `did:jwk:${"e".repeat(120)}#0`

describe("long values (pure)", () => {
  test("a long value is shortened, the whole of it in the title and the opened details", () => {
    const shown = longValue(KEY).value
    expect(shown).toContain(`title="${KEY}"`)
    expect(shown).toContain(`<code>${KEY}</code>`)
    expect(shown).toMatch(/<summary[^>]*>did:jwk:eeeeeeeeee…eeeeeeee#0<\/summary>/)
    expect(longValue("GET").value).toBe("GET")
  })

  test("in free text only the long words are shortened, the rest stays as written and escaped", () => {
    const note = withLongValues(`offer signed by ${KEY}; <b>ok</b>`).value
    expect(note.startsWith("offer signed by <details")).toBe(true)
    expect(note.endsWith("</details> &lt;b&gt;ok&lt;/b&gt;")).toBe(true)
  })
})

describe("chart labels stay inside the chart (pure)", () => {
  const chart = (formatY: (y: number) => string) =>
    lineChart({
      title: "price",
      startMs: Date.parse("2026-11-28T02:37:00Z"),
      endMs: Date.parse("2026-11-29T02:37:00Z"),
      formatY,
      series: [
        { name: "p", label: "p", color: "#000", points: [{ t: Date.parse("2026-11-29T01:00:00Z"), y: 0.00057 }] }
      ]
    }).value

  test("the y axis is as wide as its longest label", () => {
    expect(leftPad(["$0", "$0.00057"])).toBeGreaterThanOrEqual(8 * 6.5 + 6)
    const svg = chart((y) => `$${y.toPrecision(2)}`)
    const labels = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="end">(\$[^<]+)<\/text>/g)]
    expect(labels.length).toBe(3)
    // Right-aligned at x: a label of n characters needs about 6.5 n units to its left.
    for (const [, x, label] of labels) expect(Number(x)).toBeGreaterThanOrEqual(label!.length * 6.5)
  })

  test("the first and last time labels are anchored inwards", () => {
    const svg = chart((y) => String(y))
    expect(svg).toMatch(/text-anchor="start">02:37<\/text>/)
    expect(svg).toMatch(/x="588.0" y="212" text-anchor="end">02:37<\/text>/)
  })
})

describe("the facilitators section", () => {
  const embedded = {
    network: "stellar:testnet",
    feeAccount: "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464",
    feeBalanceStroops: "123450000",
    minFeeBalanceStroops: "50000000",
    channels: 8,
    leasesInUse: 3,
    settles: { settled: 12, failed: 1, pending: 2, refused: 4 }
  }
  test("an embedded backend shows its fee balance against the floor, its channel leases and its settles", () => {
    expect(formatXlm("123450000")).toBe("12.345 XLM")
    expect(formatXlm("50000000")).toBe("5 XLM")
    expect(embeddedLine(embedded)).toBe(
      "fee account 12.345 XLM (floor 5 XLM), channels 3/8 leased, settles 12 settled, 2 pending, 1 failed, 4 refused"
    )
    expect(embeddedLine({ ...embedded, feeBalanceStroops: null })).toStartWith("fee account balance not read yet")
    const page = String(
      facilitatorsSection([
        {
          id: "embedded",
          url: "embedded:stellar:testnet",
          healthy: false,
          kinds: [],
          lastCheckedAt: null,
          lastError: "the fee balance is below the floor",
          embedded
        } as any,
        {
          id: "http",
          url: "http://127.0.0.1:1/",
          healthy: true,
          kinds: [],
          lastCheckedAt: null,
          lastError: null
        } as any
      ])
    )
    expect(page).toContain("channels 3/8 leased")
    expect(page.match(/data-embedded/g)).toHaveLength(1)
  })
})
