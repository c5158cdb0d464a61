import { Either } from "effect"
import { createHash } from "node:crypto"
import { BadRequest, Unprocessable } from "../domain/errors.js"
import type { CreateReceiptRequest } from "../domain/receipts.js"
import type { ResourceRecord } from "../domain/resources.js"
import type { RankedCandidate, RouteDecision } from "../domain/routes.js"
import type { UnsignedReceipt } from "./receipt.js"

/** 422 `NO_ELIGIBLE_PROVIDER`, SPEC "Errors". */
export const noEligibleProvider = (message: string) => new Unprocessable({ error: "NO_ELIGIBLE_PROVIDER", message })

/** The router's selection, and the candidate the receipt names (the selection itself or a fallback). */
export interface EligibleChoice {
  readonly selected: RankedCandidate
  readonly chosen: RankedCandidate
}

/**
 * The given resource when it is the selection or a fallback, else the selection. A resource the
 * router rejected, or one it never saw, is not eligible.
 */
export const eligibleCandidate = (
  decision: RouteDecision,
  resourceId: string | undefined
): Either.Either<EligibleChoice, Unprocessable> => {
  const { selected } = decision
  if (selected === null) {
    return Either.left(noEligibleProvider(`no provider is eligible for "${decision.capability}": ${decision.message}`))
  }
  if (resourceId === undefined) return Either.right({ selected, chosen: selected })
  const chosen = [selected, ...decision.fallbacks].find((c) => c.resourceId === resourceId)
  if (chosen !== undefined) return Either.right({ selected, chosen })
  const rejected = decision.rejected.find((r) => r.resourceId === resourceId)
  return Either.left(
    noEligibleProvider(
      rejected === undefined
        ? `resource "${resourceId}" does not offer "${decision.capability}"`
        : `resource "${resourceId}" is not eligible for "${decision.capability}": ${rejected.codes.join(", ")}`
    )
  )
}

const badRequest = (message: string) => new BadRequest({ error: "INVALID_REQUEST", message })

const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** `bodySha256` as given, or the SHA-256 of the UTF-8 `body`; both given must agree. */
export const responseDigest = (response: CreateReceiptRequest["response"]): Either.Either<string, BadRequest> => {
  const { body, bodySha256 } = response
  if (body === undefined) {
    return bodySha256 === undefined
      ? Either.left(badRequest("response needs bodySha256 (hex SHA-256 of the body) or body"))
      : Either.right(bodySha256)
  }
  const digest = sha256Hex(body)
  return bodySha256 === undefined || bodySha256 === digest
    ? Either.right(digest)
    : Either.left(badRequest("response.bodySha256 is not the SHA-256 of response.body"))
}

/** The payment as the receipt states it: x402, the ceiling defaulting to the amount, no hash as null. */
export const receiptPayment = (
  payment: CreateReceiptRequest["payment"]
): Either.Either<UnsignedReceipt["payment"], BadRequest> => {
  const maxAmount = payment.maxAmount ?? payment.amount
  if (BigInt(maxAmount) < BigInt(payment.amount)) {
    return Either.left(badRequest(`payment.maxAmount ${maxAmount} is below payment.amount ${payment.amount}`))
  }
  return Either.right({
    protocol: "x402",
    network: payment.network,
    scheme: payment.scheme,
    asset: payment.asset,
    amount: payment.amount,
    maxAmount,
    transactionHash: payment.transactionHash ?? null
  })
}

export interface ReceiptFacts extends EligibleChoice {
  readonly receiptId: string
  readonly timestamp: string
  readonly request: CreateReceiptRequest["request"]
  readonly decision: RouteDecision
  readonly resource: ResourceRecord
  readonly payment: UnsignedReceipt["payment"]
  readonly response: UnsignedReceipt["response"]
}

/** Links intent, routing decision, chosen service, payment and response hash: the body that gets signed. */
export const receiptBody = (facts: ReceiptFacts): UnsignedReceipt => {
  const { decision, selected, chosen, resource } = facts
  return {
    receiptId: facts.receiptId,
    request: facts.request,
    routing: {
      optimizeFor: decision.optimizeFor,
      selectedResourceId: selected.resourceId,
      optionIndex: selected.optionIndex,
      score: selected.score,
      fallbacks: decision.fallbacks.map((c) => c.resourceId),
      rejectedCount: decision.rejected.length,
      decidedAt: decision.decidedAt
    },
    service: {
      resourceId: chosen.resourceId,
      providerId: resource.provider.id,
      name: resource.resource.name,
      url: resource.resource.url,
      payTo: chosen.option.payTo,
      rank: chosen.rank,
      optionIndex: chosen.optionIndex
    },
    payment: facts.payment,
    response: facts.response,
    timestamp: facts.timestamp
  }
}
