import { ServiceStatus } from "../domain/resources.js"
import type { TableSort } from "../store/CatalogTableRepo.js"
import { levelChip, statusChip } from "./chips.js"
import { formatMs, formatPercent, formatTime, formatUsd, type Html, html, queryString } from "./html.js"
import type { CatalogQuery, CatalogView } from "./StatusReader.js"

const COLUMNS: ReadonlyArray<{ readonly sort: TableSort; readonly label: string; readonly numeric?: boolean }> = [
  { sort: "provider", label: "Provider" },
  { sort: "resource", label: "Resource" },
  { sort: "capability", label: "Capability" },
  { sort: "price", label: "Price (worst case)", numeric: true },
  { sort: "status", label: "Status" },
  { sort: "level", label: "Level" },
  { sort: "availability", label: "Availability", numeric: true },
  { sort: "p95", label: "p95 latency", numeric: true },
  { sort: "confidence", label: "Confidence", numeric: true },
  { sort: "lastVerified", label: "Last verified" }
]

/** The link that keeps the filters and moves to `changes` (a new sort starts at page 1). */
export const catalogHref = (query: CatalogQuery, changes: Partial<CatalogQuery>) => {
  const next = { ...query, ...changes }
  return `/status${queryString({
    capability: next.capability,
    status: next.status,
    sort: next.sort === "provider" ? undefined : next.sort,
    dir: next.descending ? "desc" : undefined,
    page: next.page === 1 ? undefined : next.page
  })}#catalog`
}

const header = (query: CatalogQuery) =>
  COLUMNS.map((c) => {
    const active = query.sort === c.sort
    const descending = active ? !query.descending : false
    const arrow = active ? (query.descending ? " ▼" : " ▲") : ""
    return html`<th class="${c.numeric ? "num" : ""}" data-sort="${c.sort}"><a class="${active ? "sorted" : ""}" href="${catalogHref(query, { sort: c.sort, descending, page: 1 })}">${c.label}${arrow}</a></th>`
  })

const filters = (view: CatalogView) => html`<form class="filters" method="get" action="/status#catalog">
  <label>Capability<select name="capability"><option value="">any</option>${view.capabilities.map(
    (c) => html`<option value="${c}"${view.query.capability === c ? html` selected` : ""}>${c}</option>`
  )}</select></label>
  <label>Status<select name="status"><option value="">any</option>${ServiceStatus.literals.map(
    (s) => html`<option value="${s}"${view.query.status === s ? html` selected` : ""}>${s}</option>`
  )}</select></label>
  ${view.query.sort !== "provider" ? html`<input type="hidden" name="sort" value="${view.query.sort}">` : ""}
  ${view.query.descending ? html`<input type="hidden" name="dir" value="desc">` : ""}
  <button type="submit">Filter</button>
</form>`

const pager = (view: CatalogView) => {
  const pages = Math.max(1, Math.ceil(view.total / view.pageSize))
  const { page } = view.query
  return html`<div class="pager"><span class="muted">${view.total} resources · page ${page} of ${pages}</span>
  ${page > 1 ? html`<a rel="prev" href="${catalogHref(view.query, { page: page - 1 })}">← previous</a>` : ""}
  ${page < pages ? html`<a rel="next" href="${catalogHref(view.query, { page: page + 1 })}">next →</a>` : ""}</div>`
}

/** The catalog table: one row per listed resource, sorted, filtered and paged by the store. */
export const catalogSection = (view: CatalogView): Html => html`<section id="catalog">
<h2>Catalog</h2>
${filters(view)}
<div class="scroll"><table class="catalog">
<thead><tr>${header(view.query)}</tr></thead>
<tbody>${view.rows.map(
  (r) => html`<tr data-id="${r.id}">
  <td>${r.providerName}</td>
  <td><a href="/status/resources/${encodeURIComponent(r.id)}">${r.name}</a></td>
  <td>${r.capabilities.join(", ")}</td>
  <td class="num">${formatUsd(r.priceUsd)}</td>
  <td>${statusChip(r.status)}</td>
  <td>${levelChip(r.level)}</td>
  <td class="num">${r.metrics.observationCount === 0 ? "–" : formatPercent(r.metrics.availability24h)}</td>
  <td class="num">${formatMs(r.metrics.p95LatencyMs)}</td>
  <td class="num">${r.metrics.confidence.toFixed(3)}</td>
  <td>${formatTime(r.metrics.lastVerified)}</td>
</tr>`
)}</tbody>
</table></div>
${view.rows.length === 0 ? html`<p class="muted">No listed resource matches these filters.</p>` : ""}
${pager(view)}
<p class="muted">Availability, latency and confidence over the last ${view.windowHours} h of probes.</p>
</section>`
