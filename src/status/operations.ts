import { baseUnitsToUsd } from "../domain/stellar.js"
import type { FacilitatorStatus } from "../domain/x402.js"
import { chip, type Tone } from "./chips.js"
import { formatTime, formatUsd, type Html, html, withLongValues } from "./html.js"
import type { JournalLine, JournalView } from "./StatusReader.js"

/** Why a section is not shown: the page says so instead of leaving it out silently. */
export type Hidden = { readonly hidden: string }

const STATE_TONE: Record<string, Tone> = { settled: "good", pending: "neutral", failed: "bad", indeterminate: "alarm" }
const STATES = ["indeterminate", "pending", "settled", "failed"] as const

const STROOPS_PER_XLM = 10_000_000n

/** Stroops as XLM with up to 7 decimals, trailing zeros dropped. */
export const formatXlm = (stroops: string): string => {
  const value = BigInt(stroops)
  const whole = value / STROOPS_PER_XLM
  const fraction = (value % STROOPS_PER_XLM).toString().padStart(7, "0").replace(/0+$/, "")
  return `${whole}${fraction === "" ? "" : `.${fraction}`} XLM`
}

/** An embedded backend's money and sequence sources: what an operator watches to keep it settling. */
export const embeddedLine = (e: NonNullable<FacilitatorStatus["embedded"]>): string =>
  `fee account ${e.feeBalanceStroops === null ? "balance not read yet" : formatXlm(e.feeBalanceStroops)} (floor ${formatXlm(e.minFeeBalanceStroops)}), ` +
  `channels ${e.leasesInUse}/${e.channels} leased, settles ${e.settles.settled} settled, ${e.settles.pending} pending, ` +
  `${e.settles.failed} failed, ${e.settles.refused} refused`

export const facilitatorsSection = (
  facilitators: ReadonlyArray<FacilitatorStatus> | Hidden
): Html => html`<section id="facilitators">
<h2>Facilitators</h2>
${
  "hidden" in facilitators
    ? html`<p class="muted">${facilitators.hidden}</p>`
    : facilitators.length === 0
      ? html`<p class="muted">No facilitator backend is configured.</p>`
      : html`<div class="scroll"><table class="facilitators"><thead><tr><th>Backend</th><th>Health</th><th>Kinds</th><th>Last checked</th><th>Last error</th></tr></thead>
<tbody>${facilitators.map(
          (
            f
          ) => html`<tr data-backend="${f.id}"><td>${f.id}${f.embedded === undefined ? "" : html`<br><span class="muted" data-embedded>${embeddedLine(f.embedded)}</span>`}</td><td>${f.healthy ? chip("healthy", "good") : chip("unhealthy", "bad")}</td>
  <td class="wrap">${f.kinds.map((k) => `${k.scheme} on ${k.network}`).join(", ") || "–"}</td><td>${formatTime(f.lastCheckedAt)}</td><td class="wrap">${withLongValues(f.lastError ?? "")}</td></tr>`
        )}</tbody></table></div>`
}
</section>`

const entryRow = (decimals: number) => (line: JournalLine) => {
  const e = line.entry
  const errors = e.errors.map((x) => `${x.backendId}: ${x.error}`).join("; ")
  return html`<tr data-state="${e.state}"><td>${formatTime(new Date(e.createdAtMs).toISOString())}</td><td>${chip(e.state, STATE_TONE[e.state] ?? "neutral")}</td>
  <td>${e.principal}</td><td class="num">${formatUsd(baseUnitsToUsd(e.worstCaseUnits.toString(), decimals))}</td><td>${e.backendId ?? "–"}</td>
  <td class="wrap">${withLongValues(line.reason ?? "")}${errors ? html`<br><span class="muted">${withLongValues(errors)}</span>` : ""}</td></tr>`
}

const entries = (lines: ReadonlyArray<JournalLine>, decimals: number) =>
  html`<div class="scroll"><table class="journal"><thead><tr><th>Created</th><th>State</th><th>Principal</th><th class="num">Worst case</th><th>Backend</th><th>Reason</th></tr></thead>
<tbody>${lines.map(entryRow(decimals))}</tbody></table></div>`

/** The settlement journal: counts by state, then every unresolved entry with its reason, then the newest others. */
export const journalSection = (journal: JournalView | Hidden, decimals: number): Html => html`<section id="journal">
<h2>Settlement journal</h2>
${
  "hidden" in journal
    ? html`<p class="muted">${journal.hidden}</p>`
    : html`<div class="counts">${STATES.map((s) => html`<span data-count="${s}">${chip(s, STATE_TONE[s] ?? "neutral")} ${journal.counts.get(s) ?? 0}</span>`)}</div>
<h3>Indeterminate: a backend may have paid; the ledger decides</h3>
${journal.indeterminate.length === 0 ? html`<p class="muted">None.</p>` : entries(journal.indeterminate, decimals)}
<h3>Newest</h3>
${journal.recent.length === 0 ? html`<p class="muted">No settlement yet.</p>` : entries(journal.recent, decimals)}`
}
</section>`
