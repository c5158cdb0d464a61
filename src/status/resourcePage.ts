import { worstCaseUsd } from "../domain/resources.js"
import { lineChart } from "./charts.js"
import { chip, levelChip, statusChip, type Tone } from "./chips.js"
import { formatMs, formatPercent, formatTime, formatUsd, type Html, html, longValue, withLongValues } from "./html.js"
import { layout } from "./layout.js"
import type { ResourceView } from "./StatusReader.js"

const EVIDENCE_TONE: Record<string, Tone> = { confirmed: "good", pending: "neutral", rejected: "bad", failed: "warn" }

const percentAxis = (y: number) => `${Math.round(y * 100)}%`
const msAxis = (y: number) => `${Math.round(y)} ms`
const usdAxis = (y: number) => `$${y.toPrecision(2)}`

const charts = (view: ResourceView) => {
  const { series, detail } = view
  const advertised = detail.paymentOptions[0]
  return html`<div class="charts">
${lineChart({
  title: `Availability per hour (${view.windowHours} h)`,
  startMs: series.startMs,
  endMs: series.endMs,
  yMax: 1,
  formatY: percentAxis,
  series: [{ name: "availability", label: "answered / probes", color: "#2a9d5c", points: series.availability }]
})}
${lineChart({
  title: "Latency per hour",
  startMs: series.startMs,
  endMs: series.endMs,
  formatY: msAxis,
  series: [
    { name: "p50", label: "p50", color: "#3a6ea5", points: series.p50LatencyMs },
    { name: "p95", label: "p95", color: "#d9822b", points: series.p95LatencyMs }
  ]
})}
${lineChart({
  title: "Observed price against advertised",
  startMs: series.startMs,
  endMs: series.endMs,
  formatY: usdAxis,
  series: [{ name: "observed-price", label: "asked by the 402", color: "#7b3fa0", points: series.observedPriceUsd }],
  reference: advertised
    ? { label: `advertised ${formatUsd(worstCaseUsd(advertised))}`, color: "#5b6470", y: worstCaseUsd(advertised) }
    : undefined
})}
</div>`
}

const timeline = (view: ResourceView) =>
  view.detail.transitions.length === 0
    ? html`<p class="muted">No status change recorded yet.</p>`
    : html`<ol class="timeline">${view.detail.transitions.map(
        (t) =>
          html`<li><span class="muted">${formatTime(t.at)}</span> ${statusChip(t.from)} → ${statusChip(t.to)} L${t.fromLevel} → L${t.toLevel}<br>${withLongValues(t.reason)}</li>`
      )}</ol>`

const observations = (view: ResourceView) => html`<div class="scroll"><table class="observations">
<thead><tr><th>Observed</th><th>Outcome</th><th class="num">HTTP</th><th class="num">Latency</th><th class="num">Price</th><th>Note</th></tr></thead>
<tbody>${view.recent.map(
  (
    o
  ) => html`<tr><td>${formatTime(o.observedAt)}</td><td>${chip(o.outcome, o.outcome === "healthy" ? "good" : "bad")}</td>
  <td class="num">${o.httpStatus ?? "–"}</td><td class="num">${formatMs(o.latencyMs)}</td><td class="num">${formatUsd(o.priceUsd)}</td>
  <td class="wrap">${withLongValues(o.detail ?? "")}</td></tr>`
)}</tbody></table></div>
${view.recent.length === 0 ? html`<p class="muted">No observation stored.</p>` : ""}`

const economic = (view: ResourceView) =>
  view.detail.economicEvidence.length === 0
    ? html`<p class="muted">No payment recorded for this resource or its payees.</p>`
    : html`<div class="scroll"><table class="economic"><thead><tr><th>At</th><th>Source</th><th>Ledger state</th><th>Transaction</th><th class="num">Ledger</th><th>Why</th></tr></thead>
<tbody>${view.detail.economicEvidence.map(
        (
          e
        ) => html`<tr><td>${formatTime(e.at)}</td><td>${e.source}</td><td>${chip(e.state, EVIDENCE_TONE[e.state] ?? "neutral")}</td>
  <td>${e.transactionHash === null ? "–" : longValue(e.transactionHash)}</td><td class="num">${e.ledger ?? "–"}</td><td class="wrap">${withLongValues(e.reason ?? "")}</td></tr>`
      )}</tbody></table></div>`

/**
 * The bazaar's service metadata, when the resource has any. The icon URL is shown as text, not
 * loaded: the page fetches nothing from hosts a seller names.
 */
const service = (resource: ResourceView["detail"]["resource"]): Html | null =>
  resource.serviceName === undefined && resource.tags === undefined && resource.iconUrl === undefined
    ? null
    : html`<dt>Service</dt><dd>${resource.serviceName ?? "–"}${resource.tags ? html` <span class="muted">${resource.tags.join(" · ")}</span>` : null}${
        resource.iconUrl ? html` <span class="muted">icon ${longValue(resource.iconUrl)}</span>` : null
      }</dd>`

const facts = (view: ResourceView): Html => {
  const { detail } = view
  const m = detail.metrics
  return html`<dl class="facts">
<dt>Provider</dt><dd>${detail.provider.name}</dd>
${service(detail.resource)}${
  detail.resource.mcp === undefined
    ? html`<dt>URL</dt><dd>${detail.resource.method} ${longValue(detail.resource.url)}</dd>`
    : html`<dt>MCP tool</dt><dd>${detail.resource.mcp.toolName} at ${longValue(detail.resource.url)} (${detail.resource.mcp.transport})</dd>`
}
<dt>Capabilities</dt><dd>${detail.resource.capabilities.join(", ")}</dd>
<dt>Status</dt><dd>${statusChip(detail.resource.status)} ${levelChip(detail.resource.verificationLevel)}${
    detail.curation.quarantine
      ? html` quarantined by ${detail.curation.quarantine.actor}: ${detail.curation.quarantine.reason}`
      : ""
  }</dd>
<dt>Offer signer</dt><dd class="signer">${view.offerSigner === null ? html`<span class="muted">no signed offer seen</span>` : longValue(view.offerSigner)}</dd>
<dt>Prices</dt><dd>${detail.paymentOptions.map((o) => `${o.scheme} ${formatUsd(worstCaseUsd(o))}`).join(" · ")}</dd>
<dt>Availability</dt><dd>${formatPercent(m.availability24h)} of ${m.observationCount} probes</dd>
<dt>Latency</dt><dd>p50 ${formatMs(m.p50LatencyMs)} · p95 ${formatMs(m.p95LatencyMs)}</dd>
<dt>Confidence</dt><dd>${m.confidence.toFixed(3)}</dd>
<dt>Last verified</dt><dd>${formatTime(m.lastVerified)}</dd>
</dl>`
}

/** One resource: its figures, plots over the metric window, transitions, observations and payments. */
export const resourcePage = (view: ResourceView): string =>
  layout(
    view.detail.resource.name,
    html`<h1>${view.detail.resource.name} <span class="muted">${view.detail.resource.id}</span></h1>
<section>${facts(view)}</section>
<section><h2>Over the last ${view.windowHours} h</h2>${charts(view)}</section>
<section id="transitions"><h2>Status transitions</h2>${timeline(view)}</section>
<section id="observations"><h2>Recent observations</h2>${observations(view)}</section>
<section id="economic"><h2>Economic evidence</h2>${economic(view)}</section>`
  )
