/**
 * HTML built by a tagged template that escapes every interpolated value unless it is already
 * `Html`: names, descriptions and errors come from providers, imported catalogs and backends, so
 * nothing reaches the page unescaped by default.
 */
export class Html {
  constructor(readonly value: string) {}
  toString() {
    return this.value
  }
}

export const escapeHtml = (text: string) =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")

type Part = Html | string | number | null | undefined | false | ReadonlyArray<Part>

const render = (part: Part): string =>
  part === null || part === undefined || part === false
    ? ""
    : part instanceof Html
      ? part.value
      : Array.isArray(part)
        ? part.map(render).join("")
        : escapeHtml(String(part))

export const html = (strings: TemplateStringsArray, ...parts: ReadonlyArray<Part>): Html =>
  new Html(strings.reduce((out, s, i) => out + s + (i < parts.length ? render(parts[i] as Part) : ""), ""))

/** Markup the caller vouches for (generated SVG path data, constant CSS). */
export const trusted = (markup: string) => new Html(markup)

/** A query string from the entries whose value is set, for links that keep the table's state. */
export const queryString = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") search.set(k, String(v))
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

export const formatUsd = (usd: number | null) =>
  usd === null ? "–" : `$${usd < 0.01 ? usd.toPrecision(2) : usd.toFixed(usd < 1 ? 3 : 2)}`
export const formatPercent = (ratio: number | null) => (ratio === null ? "–" : `${(ratio * 100).toFixed(1)}%`)
export const formatMs = (ms: number | null) => (ms === null ? "–" : `${Math.round(ms)} ms`)
/** ISO times shown as UTC minutes: the page is read by people in any time zone. */
export const formatTime = (iso: string | null) => (iso === null ? "never" : `${iso.slice(0, 16).replace("T", " ")} UTC`)

/** Values longer than this (keys, URLs, transaction hashes) are shortened on the page. */
const LONG_VALUE = 40

/**
 * A long value shortened to its head and tail, the whole value one click away (or on hover, in the
 * title): opening it shows the value in full, wrapped inside its box, selected by one click for
 * copying. No script: a `<details>` element.
 */
export const longValue = (value: string): Html =>
  value.length <= LONG_VALUE
    ? html`${value}`
    : html`<details class="long"><summary title="${value}">${value.slice(0, 18)}…${value.slice(-10)}</summary><code>${value}</code></details>`

/** Free text (a probe's note, an error) with each long word in it shortened by `longValue`. */
export const withLongValues = (text: string): Html =>
  html`${text.split(/(\s+)/).map((word) => (word.length > LONG_VALUE ? longValue(word) : word))}`
