import { type Html, html } from "./html.js"
import type { SeriesPoint } from "./series.js"

/**
 * Charts are SVG drawn here, on the server, rather than by a charting library in the browser: the
 * page is server-rendered with sorting and paging done by the store, so with SVG it needs no
 * script at all (a strict CSP, nothing to bundle into the single binary, readable with scripts
 * off), and a chart is a pure function of its series, tested without a browser. The charts are
 * time series with a few dozen points: axes, a polyline and a dot per point are all they need.
 */
export interface ChartSeries {
  /** Stable name: the `data-series` of its dots, which tests count. */
  readonly name: string
  readonly label: string
  readonly color: string
  readonly points: ReadonlyArray<SeriesPoint>
}

export interface ChartSpec {
  readonly title: string
  readonly startMs: number
  readonly endMs: number
  readonly series: ReadonlyArray<ChartSeries>
  /** A horizontal line, e.g. the advertised price. */
  readonly reference?: { readonly label: string; readonly color: string; readonly y: number } | undefined
  /** Fixed y range (availability is 0..1); else 0..the largest value with headroom. */
  readonly yMax?: number | undefined
  readonly formatY: (y: number) => string
}

const WIDTH = 600
const HEIGHT = 220
const PAD = { right: 12, top: 12, bottom: 28 }
/**
 * Width of one label character at the labels' 11 px, in viewBox units, rounded up (digits and `$`
 * are about 6.1): the y axis is as wide as its longest label, so `$0.00057` is never cut.
 */
const CHAR_WIDTH = 7
/** The left margin: room for the longest y label, right-aligned 6 units before the axis. */
export const leftPad = (labels: ReadonlyArray<string>) =>
  Math.max(40, 12 + CHAR_WIDTH * Math.max(0, ...labels.map((l) => l.length)))

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16)
const fixed = (n: number) => n.toFixed(1)

export const lineChart = (spec: ChartSpec): Html => {
  const values = [
    ...spec.series.flatMap((s) => s.points.map((p) => p.y)),
    ...(spec.reference ? [spec.reference.y] : [])
  ]
  const top = spec.yMax ?? Math.max(1e-9, ...values) * 1.15
  const yTicks = [0, top / 2, top]
  const left = leftPad(yTicks.map(spec.formatY))
  const plotW = WIDTH - left - PAD.right
  const plotH = HEIGHT - PAD.top - PAD.bottom
  const x = (t: number) => left + ((t - spec.startMs) / Math.max(1, spec.endMs - spec.startMs)) * plotW
  const y = (v: number) => PAD.top + plotH - (Math.min(v, top) / top) * plotH
  // The edge labels are anchored inwards, so the newest time is not cut at the right edge.
  const xTicks = [
    { t: spec.startMs, anchor: "start" },
    { t: (spec.startMs + spec.endMs) / 2, anchor: "middle" },
    { t: spec.endMs, anchor: "end" }
  ]
  const empty = spec.series.every((s) => s.points.length === 0)
  return html`<figure>
  <figcaption>${spec.title}</figcaption>
  <svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="${spec.title}">
    <line x1="${left}" y1="${PAD.top + plotH}" x2="${WIDTH - PAD.right}" y2="${PAD.top + plotH}" stroke="#d8dde3"/>
    ${yTicks.map(
      (
        v
      ) => html`<line x1="${left}" y1="${fixed(y(v))}" x2="${WIDTH - PAD.right}" y2="${fixed(y(v))}" stroke="#eef0f3"/>
    <text x="${left - 6}" y="${fixed(y(v) + 4)}" text-anchor="end">${spec.formatY(v)}</text>`
    )}
    ${xTicks.map((tick) => html`<text x="${fixed(x(tick.t))}" y="${HEIGHT - 8}" text-anchor="${tick.anchor}">${clock(tick.t)}</text>`)}
    ${
      spec.reference
        ? html`<line class="reference" x1="${left}" y1="${fixed(y(spec.reference.y))}" x2="${WIDTH - PAD.right}" y2="${fixed(y(spec.reference.y))}" stroke="${spec.reference.color}" stroke-dasharray="6 4"/>`
        : ""
    }
    ${spec.series.map(
      (
        s
      ) => html`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${s.points.map((p) => `${fixed(x(p.t))},${fixed(y(p.y))}`).join(" ")}"/>
    ${s.points.map(
      (p) =>
        html`<circle class="point" data-series="${s.name}" cx="${fixed(x(p.t))}" cy="${fixed(y(p.y))}" r="3" fill="${s.color}"><title>${clock(p.t)} ${s.label}: ${spec.formatY(p.y)}</title></circle>`
    )}`
    )}
    ${empty ? html`<text x="${WIDTH / 2}" y="${HEIGHT / 2}" text-anchor="middle">no probes in the window</text>` : ""}
  </svg>
  <div class="legend">${spec.series.map((s) => html`<span><svg class="swatch" viewBox="0 0 10 10" aria-hidden="true"><rect width="10" height="10" rx="2" fill="${s.color}"/></svg>${s.label}</span>`)}${
    spec.reference ? html`<span>– – ${spec.reference.label}</span>` : ""
  }</div>
</figure>`
}
