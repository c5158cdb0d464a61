import { Either } from "effect"
import type { EconomicEvent } from "../domain/evidence.js"
import type { OutcomeReport, PurchaseOutcome } from "../domain/outcomes.js"
import type { ResourceRecord } from "../domain/resources.js"
import type { LedgerTransaction, LedgerTransfer } from "../ledger/LedgerReader.js"

/** The deployment a reported payment must have been made on: the ledger read is this network's. */
export interface OutcomeDeployment {
  readonly network: string
  readonly assetContract: string
}

/** A reported transaction matched to the catalog entry it paid. */
export interface PaidEntry {
  readonly record: ResourceRecord
  readonly transfer: LedgerTransfer
}

/**
 * Settled and delivered say the payment went through: once the ledger confirms it they are a
 * buyer's payment, as a receipt is. Refused and not delivered are the buyer's word about the
 * seller, which no ledger can check: shown, never counted (confirmation.ts, initialResolution).
 */
export const reportsPayment = (outcome: PurchaseOutcome): boolean => outcome === "settled" || outcome === "delivered"

/**
 * Which entry at the reported URL the transaction paid: the first (by the order given) with an
 * option on this network, in this asset, whose payee the transaction's successful SEP-41 transfers
 * pay at least that option's price. Left: why the report cannot be taken (the ledger does not
 * have the transaction, it failed, or it pays no entry's payee enough).
 */
export const paidEntry = (
  entries: ReadonlyArray<ResourceRecord>,
  found: LedgerTransaction | null,
  transactionHash: string,
  deployment: OutcomeDeployment
): Either.Either<PaidEntry, string> => {
  if (found === null) return Either.left(`transaction ${transactionHash} is not on the ledger`)
  if (!found.successful)
    return Either.left(`transaction ${transactionHash} failed on the ledger (ledger ${found.ledger}): it paid nothing`)
  for (const record of entries) {
    for (const option of record.paymentOptions) {
      if (option.network !== deployment.network || option.asset !== deployment.assetContract) continue
      const transfer = found.transfers.find(
        (t) => t.contract === deployment.assetContract && t.to === option.payTo && t.amount >= BigInt(option.amount)
      )
      if (transfer !== undefined) return Either.right({ record, transfer })
    }
  }
  const seen = found.transfers.map((t) => `${t.amount} of ${t.contract} to ${t.to}`).join("; ") || "no SEP-41 transfer"
  const wanted = entries
    .flatMap((r) =>
      r.paymentOptions.filter((o) => o.network === deployment.network).map((o) => `at least ${o.amount} to ${o.payTo}`)
    )
    .join(" or ")
  return Either.left(
    `transaction ${transactionHash} does not pay the payee of ${entries.map((r) => r.resource.id).join(", ")} (${wanted || "no option on this network"}); it holds: ${seen}`
  )
}

/**
 * The report as an economic event: at the transaction's close time, from the payer and for the
 * amount the ledger showed, so the confirmation pass rereads the same transfer and applies the rules
 * every buyer payment meets (distinct payers, no payee-funded payer, one transaction one resource).
 */
export const outcomeEvent = (report: OutcomeReport, paid: PaidEntry, closedAt: string): EconomicEvent => ({
  source: "outcome",
  resourceId: paid.record.resource.id,
  payTo: paid.transfer.to,
  success: reportsPayment(report.outcome),
  transactionHash: report.transactionHash,
  at: closedAt,
  payer: paid.transfer.from,
  expected: { payTo: paid.transfer.to, amount: paid.transfer.amount.toString(), scheme: "exact" },
  outcome: report.outcome
})
