import type { ServiceStatus } from "../domain/resources.js"
import { html } from "./html.js"

/** How a status reads at a glance; the colour classes are in style.ts. */
export type Tone = "good" | "warn" | "bad" | "alarm" | "neutral"

export const statusTone = (status: ServiceStatus): Tone => {
  switch (status) {
    case "LIVE":
    case "PAYMENT_VERIFIED":
    case "TRANSACTION_VERIFIED":
    case "CONTINUOUSLY_VERIFIED":
      return "good"
    case "DEGRADED":
      return "warn"
    case "OFFLINE":
      return "bad"
    case "QUARANTINED":
      return "alarm"
    case "DISCOVERED":
    case "VALIDATING":
      return "neutral"
  }
}

export const chip = (label: string, tone: Tone) => html`<span class="chip chip-${tone}">${label}</span>`
export const statusChip = (status: ServiceStatus) => chip(status, statusTone(status))
/** Levels 0-4 (docs/decisions.md): the higher, the more of the payment path has been seen to work. */
export const levelChip = (level: number) => html`<span class="chip chip-level chip-level-${level}">L${level}</span>`
