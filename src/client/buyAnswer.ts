import { createHash } from "node:crypto"
import { Effect } from "effect"
import type { BuyAttempt, BuyRequest } from "../domain/buy.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { RankedCandidate } from "../domain/routes.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { isJsonType, type PaidAnswer } from "../payments/payFor.js"
import type { BuyerSettings } from "./Buyer.js"
import type { Delivered } from "./buyPayment.js"
import { describeFailure } from "./errors.js"
import type { SextantClientShape } from "./SextantClient.js"

const sha256Hex = (body: Uint8Array) => createHash("sha256").update(body).digest("hex")

/** The answer as data: parsed when it declares JSON and is, its text otherwise. */
const dataOf = (paid: PaidAnswer): unknown => {
  const text = (paid.body ?? Buffer.alloc(0)).toString("utf8")
  if (!isJsonType(paid.contentType)) return text
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** Step 3: the receipt of a delivered purchase; its failure is reported beside the data, never instead of it. */
export const receiptOf = (
  client: SextantClientShape,
  request: BuyRequest,
  policy: AgentPolicy,
  candidate: RankedCandidate,
  delivered: Delivered
) =>
  client.receipts
    .create({
      payload: {
        request: {
          capability: request.capability,
          constraints: policy,
          ...(request.optimizeFor ? { optimizeFor: request.optimizeFor } : {})
        },
        resourceId: candidate.resourceId,
        payment: {
          network: candidate.option.network,
          scheme: "exact",
          asset: delivered.paid.requirements.asset,
          amount: delivered.paid.amount,
          ...(delivered.transactionHash === null ? {} : { transactionHash: delivered.transactionHash })
        },
        response: { status: delivered.paid.status, bodySha256: sha256Hex(delivered.paid.body ?? Buffer.alloc(0)) },
        ...(delivered.paid.sellerReceipt === null ? {} : { sellerReceipt: delivered.paid.sellerReceipt })
      }
    })
    .pipe(
      Effect.map((receipt) => ({ receipt })),
      Effect.catchAll((e) => Effect.succeed({ receipt: null, receiptError: describeFailure(e) }))
    )

/** Step 4: the answer of a delivered purchase. */
export const resultOf = (
  settings: BuyerSettings,
  candidate: RankedCandidate,
  rank: number,
  delivered: Delivered,
  attempts: ReadonlyArray<BuyAttempt>
) => ({
  data: dataOf(delivered.paid),
  provider: {
    resourceId: candidate.resourceId,
    providerId: candidate.providerId,
    name: delivered.resource.name,
    url: delivered.resource.url,
    rank
  },
  paid: {
    network: candidate.option.network,
    scheme: "exact" as const,
    asset: delivered.paid.requirements.asset,
    amount: delivered.paid.amount,
    amountUsd: baseUnitsToUsd(delivered.paid.amount, settings.decimals),
    payTo: delivered.paid.requirements.payTo,
    payer: settings.key.address,
    transactionHash: delivered.transactionHash
  },
  attempts
})
