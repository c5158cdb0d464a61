import { Schema } from "effect"
import { EconomicEvidence } from "./evidence.js"
import { ResourceId } from "./ids.js"
import { HttpUrl } from "./preflight.js"
import { TransactionHash } from "./receipts.js"

/**
 * What became of a purchase, as the buyer saw it: the seller settled the payment (`settled`),
 * refused it (`refused`), answered with what was bought (`delivered`) or took the payment and did
 * not deliver (`not_delivered`).
 */
export const PurchaseOutcome = Schema.Literal("settled", "refused", "delivered", "not_delivered").annotations({
  identifier: "PurchaseOutcome"
})
export type PurchaseOutcome = typeof PurchaseOutcome.Type

/** A buyer's report of a purchase's outcome, with the transaction that paid for it. */
export const OutcomeReport = Schema.Struct({
  /** The URL paid for: the catalog's entries at it are what the report is about. */
  url: HttpUrl,
  /** Which entry at the URL, when more than one is there (an MCP server's tools share one URL). */
  resourceId: Schema.optional(ResourceId),
  outcome: PurchaseOutcome,
  /** The transaction that paid: the ledger must show it paying the entry's payee at least the entry's price. */
  transactionHash: TransactionHash
}).annotations({ identifier: "OutcomeReport" })
export type OutcomeReport = typeof OutcomeReport.Type

/** What a report became: stored once per transaction, and whether it can move any evidence. */
export const OutcomeAnswer = Schema.Struct({
  resourceId: ResourceId,
  outcome: PurchaseOutcome,
  transactionHash: Schema.String,
  /** False when this transaction was reported before: the first report stands, a repeat is not stored. */
  recorded: Schema.Boolean,
  /** The stored report as evidence: `pending` until the confirmation pass rereads the ledger, `rejected` (with why) when it can move nothing. */
  evidence: EconomicEvidence
}).annotations({ identifier: "OutcomeAnswer" })
export type OutcomeAnswer = typeof OutcomeAnswer.Type
