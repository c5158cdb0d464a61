import { Option } from "effect"
import type { EconomicEvent } from "../domain/evidence.js"
import type { LedgerTransaction } from "../ledger/LedgerReader.js"
import type { EventResolution, PendingEvent } from "../store/EconomicEventsRepo.js"

/** What confirmation needs to know of the deployment. */
export interface ConfirmationRules {
  /** The configured asset's SEP-41 contract: the only token a confirming transfer may move. */
  readonly assetContract: string
  /** How long after its claimed time a payment may still be missing from the ledger, and how far its ledger time may be from the claim. */
  readonly confirmTimeoutSeconds: number
  /** Wait before looking at a pending event again. */
  readonly recheckMs: number
}

const settled = (
  state: EventResolution["state"],
  reason: string | null,
  ledger: number | null = null
): EventResolution => ({
  state,
  reason,
  ledger,
  nextCheckMs: null
})

/**
 * Where a reported payment starts. Only what can be checked waits for the ledger; a failure counts
 * against the resource only when this service saw it (a facilitator's settle answer, its own probe),
 * never on a buyer's word.
 */
export const initialResolution = (event: EconomicEvent, nowMs: number): EventResolution => {
  // Neither a success nor a failure: a payment that does not cost what the resource claims says nothing about it.
  if (event.notEvidence !== undefined) return settled("rejected", event.notEvidence)
  if (!event.success) {
    if (event.source === "outcome") {
      return settled(
        "rejected",
        `a buyer reported ${event.outcome ?? "a failure"}: shown, never counted (only failures this service observed count)`
      )
    }
    return event.source === "receipt"
      ? settled("rejected", "a failure a buyer reports is not evidence: only failures this service observed count")
      : settled(
          "failed",
          event.source === "probe" ? "the probe's payment failed" : "the facilitator answered success: false"
        )
  }
  if (event.transactionHash === null)
    return settled("rejected", "no transaction hash: nothing to confirm on the ledger")
  if (event.expected === null) return settled("rejected", "no payment terms to check the transaction against")
  return {
    state: "pending",
    reason: "waiting for the ledger to confirm the transaction",
    ledger: null,
    nextCheckMs: nowMs
  }
}

const amountFits = (paid: bigint, expected: PendingEvent["expected"]) =>
  expected.scheme === "upto" ? paid > 0n && paid <= BigInt(expected.amount) : paid === BigInt(expected.amount)

/**
 * Judges a pending payment by what the ledger holds for its hash: confirmed when the transaction
 * succeeded and transfers the configured asset to the expected payee for the expected amount (at
 * most the ceiling for `upto`), from the reported payer when one is known, within the confirmation
 * window of the claimed time. Missing: still pending inside the window, rejected after it.
 */
export const judgeTransaction = (
  event: PendingEvent,
  found: Option.Option<LedgerTransaction>,
  nowMs: number,
  rules: ConfirmationRules
): EventResolution => {
  const claimedMs = Date.parse(event.at)
  const windowMs = rules.confirmTimeoutSeconds * 1000
  if (Option.isNone(found)) {
    return nowMs - claimedMs > windowMs
      ? settled(
          "rejected",
          `transaction ${event.transactionHash} was not found on the ledger within ${rules.confirmTimeoutSeconds} s`
        )
      : { state: "pending", reason: "not on the ledger yet", ledger: null, nextCheckMs: nowMs + rules.recheckMs }
  }
  const tx = found.value
  if (!tx.successful)
    return settled("rejected", `transaction ${tx.hash} failed on the ledger (ledger ${tx.ledger})`, tx.ledger)
  const drift = Math.abs(Date.parse(tx.closedAt) - claimedMs)
  if (drift > windowMs) {
    return settled(
      "rejected",
      `transaction ${tx.hash} closed at ${tx.closedAt}, more than ${rules.confirmTimeoutSeconds} s from the claimed ${event.at}`,
      tx.ledger
    )
  }
  const matching = tx.transfers.find(
    (t) =>
      t.contract === rules.assetContract &&
      t.to === event.expected.payTo &&
      amountFits(t.amount, event.expected) &&
      (event.payer === null || t.from === event.payer)
  )
  if (matching === undefined) {
    const seen = tx.transfers.map((t) => `${t.amount} of ${t.contract} to ${t.to}`).join("; ") || "no SEP-41 transfer"
    const wanted = `${event.expected.scheme === "upto" ? "at most " : ""}${event.expected.amount} of ${rules.assetContract} to ${event.expected.payTo}`
    return settled("rejected", `transaction ${tx.hash} does not pay ${wanted} (it holds: ${seen})`, tx.ledger)
  }
  if (matching.from === event.expected.payTo) {
    return settled(
      "rejected",
      `transaction ${tx.hash} is a payment from the payee ${matching.from} to itself: no buyer`,
      tx.ledger
    )
  }
  return { ...settled("confirmed", `confirmed in ledger ${tx.ledger}`, tx.ledger), payer: matching.from }
}

/**
 * A confirmed payment whose payer the payee funded (sent the asset to) in the ledgers before it,
 * within the metric window, is the payee paying itself through a second account: rejected. No
 * I/O: `funding` is what the ledger showed of such transfers.
 */
export const judgeFunding = (
  event: PendingEvent,
  confirmed: EventResolution,
  funding: ReadonlyArray<{ readonly transactionHash: string; readonly ledger: number }>
): EventResolution => {
  const first = funding[0]
  if (confirmed.state !== "confirmed" || first === undefined) return confirmed
  return {
    ...settled(
      "rejected",
      `payer ${confirmed.payer} was funded by the payee ${event.expected.payTo} in ledger ${first.ledger} (transaction ${first.transactionHash}), within the window before it paid: no independent buyer`,
      confirmed.ledger
    ),
    ...(confirmed.payer !== undefined ? { payer: confirmed.payer } : {})
  }
}
