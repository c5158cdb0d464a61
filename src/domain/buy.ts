import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { AnyJson } from "./json.js"
import { AgentPolicy } from "./policy.js"
import { CommerceReceipt } from "./receipts.js"
import { OptimizeFor } from "./routes.js"
import { BaseUnits, Capability, StellarNetwork } from "./stellar.js"

/**
 * One purchase as a buyer asks for it (the TypeScript client, `sextant buy`, the MCP
 * `buy_resource` tool). `maxUsd` is the command line's `--max-usd`: it tightens
 * `policy.maxPricePerRequestUsd`, never loosens it.
 */
export const BuyRequest = Schema.Struct({
  capability: Capability,
  /** Sent as the JSON body to a POST/PUT/PATCH resource, as query parameters to the others. */
  input: Schema.optional(AnyJson),
  policy: Schema.optional(AgentPolicy),
  optimizeFor: Schema.optional(OptimizeFor),
  maxUsd: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative()))
}).annotations({ identifier: "BuyRequest" })
export type BuyRequest = typeof BuyRequest.Type

/**
 * What became of one provider tried:
 * - `paid`: paid and answered; the purchase ends here;
 * - `refused`: nothing signed, because the candidate or its challenge broke the route or the policy
 *   (a price above the routed worst case, another payee, another asset...);
 * - `over_budget`: nothing signed, because the local spend ledger (or the session cap) has no room;
 * - `failed`: nothing paid (unreachable, no usable challenge, the paid request answered without
 *   settling); the next provider is tried;
 * - `paid_failed`: the payment settled but no usable answer came back; the purchase stops, since
 *   trying another provider would pay twice;
 * - `unknown`: the signed payment was sent and no answer came: it may have settled; the purchase
 *   stops and is never retried.
 */
export const AttemptOutcome = Schema.Literal(
  "paid",
  "refused",
  "over_budget",
  "failed",
  "paid_failed",
  "unknown"
).annotations({
  identifier: "AttemptOutcome"
})
export type AttemptOutcome = typeof AttemptOutcome.Type

export const BuyAttempt = Schema.Struct({
  /** 1 is the route's selection, higher ranks its fallbacks in order. */
  rank: Schema.Int,
  resourceId: ResourceId,
  providerId: Schema.String,
  outcome: AttemptOutcome,
  reason: Schema.String,
  /** Base units signed for; null when nothing was signed. */
  amount: Schema.NullOr(BaseUnits),
  /** The paid request's HTTP status; null when it was not sent or not answered. */
  httpStatus: Schema.NullOr(Schema.Int),
  transactionHash: Schema.NullOr(Schema.String),
  /** The payment identifier the payment carried (the seller offered the extension); absent without one. */
  paymentIdentifier: Schema.optional(Schema.String),
  /** How many times the same signed payment was sent: more than 1 only as resends under a payment identifier. */
  sends: Schema.optional(Schema.Int)
}).annotations({ identifier: "BuyAttempt" })
export type BuyAttempt = typeof BuyAttempt.Type

export const BuyProvider = Schema.Struct({
  resourceId: ResourceId,
  providerId: Schema.String,
  name: Schema.String,
  url: Schema.String,
  rank: Schema.Int
}).annotations({ identifier: "BuyProvider" })
export type BuyProvider = typeof BuyProvider.Type

export const BuyPayment = Schema.Struct({
  network: StellarNetwork,
  scheme: Schema.Literal("exact"),
  asset: Schema.String,
  amount: BaseUnits,
  amountUsd: Schema.Number,
  payTo: Schema.String,
  payer: Schema.String,
  /** From the resource's PAYMENT-RESPONSE; null when a 2xx came without one. */
  transactionHash: Schema.NullOr(Schema.String)
}).annotations({ identifier: "BuyPayment" })
export type BuyPayment = typeof BuyPayment.Type

export const BuyResult = Schema.Struct({
  /** The resource's answer: parsed JSON when it declared JSON, else its text. */
  data: AnyJson,
  /** The service's signed receipt; null when it could not be had (`receiptError` says why): the data is kept either way. */
  receipt: Schema.NullOr(CommerceReceipt),
  receiptError: Schema.optional(Schema.String),
  provider: BuyProvider,
  paid: BuyPayment,
  attempts: Schema.Array(BuyAttempt)
}).annotations({ identifier: "BuyResult" })
export type BuyResult = typeof BuyResult.Type
