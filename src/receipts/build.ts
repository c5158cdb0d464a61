import { createHash } from "node:crypto"
import { Either } from "effect"
import { InvalidRequest, NoEligibleProvider, PaymentMismatch } from "../domain/errors.js"
import type { ReceiptId, ResourceId } from "../domain/ids.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { CreateReceiptRequest } from "../domain/receipts.js"
import type { ResourcePaymentOption, ResourceRecord } from "../domain/resources.js"
import type { RankedCandidate, RouteDecision } from "../domain/routes.js"
import { evaluatePolicy, OPTION_CODES, type PolicyContext } from "../policy/evaluate.js"
import type { UnsignedReceipt } from "./receipt.js"

/** 422 `NO_ELIGIBLE_PROVIDER`, SPEC "Errors". */
export const noEligibleProvider = (message: string) => new NoEligibleProvider({ message })

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
  resourceId: ResourceId | undefined
): Either.Either<EligibleChoice, NoEligibleProvider> => {
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

const badRequest = (message: string) => new InvalidRequest({ message })

const sha256Hex = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")

/** `bodySha256` as given, or the SHA-256 of the UTF-8 `body`; both given must agree. */
export const responseDigest = (response: CreateReceiptRequest["response"]): Either.Either<string, InvalidRequest> => {
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
): Either.Either<UnsignedReceipt["payment"], InvalidRequest> => {
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

/** 422 `PAYMENT_MISMATCH`: the payment is not one the named service offers. */
const paymentMismatch = (message: string) => new PaymentMismatch({ message })

/** A payment option of the named service, with its index among the resource's options. */
export interface PaidOption {
  readonly optionIndex: number
  readonly option: ResourcePaymentOption
}

/** The most an option can charge, in base units: the authorised ceiling for `upto`, the price for `exact`. */
const ceiling = (option: ResourcePaymentOption) =>
  option.scheme === "upto" ? (option.maxAmount ?? option.amount) : option.amount

/** Payment fields in the order they are compared; an option failing later is the closer one. */
const FIELDS = ["network", "scheme", "asset", "amount", "maxAmount"] as const

interface Disagreement {
  readonly field: (typeof FIELDS)[number]
  readonly paid: string
  readonly offered: string
}

/**
 * Where the payment first contradicts the option, or undefined when it agrees. The asset may be
 * named by contract id or by the configured symbol of that contract, as policies may name it.
 */
const disagreement = (
  payment: UnsignedReceipt["payment"],
  option: ResourcePaymentOption,
  context: PolicyContext
): Disagreement | undefined => {
  if (payment.network !== option.network) return { field: "network", paid: payment.network, offered: option.network }
  if (payment.scheme !== option.scheme) return { field: "scheme", paid: payment.scheme, offered: option.scheme }
  const symbol = context.assetSymbols.get(option.asset)
  if (payment.asset !== option.asset && payment.asset !== symbol) {
    return {
      field: "asset",
      paid: payment.asset,
      offered: symbol === undefined ? option.asset : `${option.asset} (${symbol})`
    }
  }
  const most = ceiling(option)
  if (BigInt(payment.amount) > BigInt(most)) return { field: "amount", paid: payment.amount, offered: most }
  if (BigInt(payment.maxAmount) > BigInt(most)) return { field: "maxAmount", paid: payment.maxAmount, offered: most }
  return undefined
}

/**
 * Why the request's constraints refuse an option of an eligible resource, or undefined. Routing
 * allowed the resource on its ranked option, so its evidence and provider passed; what can still
 * differ between its options is the option's own price, network, asset, scheme and payee.
 */
const constraintRefusal = (
  policy: AgentPolicy,
  providerId: string,
  option: ResourcePaymentOption,
  context: PolicyContext
): string | undefined => {
  const own = evaluatePolicy({ policy, providerId, option, evidence: undefined, context }).reasons.filter(
    (r) => OPTION_CODES.has(r.code) || r.code === "PROVIDER_DENIED"
  )
  return own.length === 0 ? undefined : own.map((r) => `${r.code}: ${r.message}`).join("; ")
}

/**
 * The option of the named service the payment agrees with: same network, scheme and asset, an
 * amount and ceiling no higher than the option's worst case. Routing's ranked option is tried
 * first; another option of the resource must also satisfy the request's constraints. A payment
 * no option fits is 422 `PAYMENT_MISMATCH`, naming the field and both values of the closest option.
 */
export const paidOption = (
  payment: UnsignedReceipt["payment"],
  resource: ResourceRecord,
  chosen: RankedCandidate,
  policy: AgentPolicy,
  context: PolicyContext
): Either.Either<PaidOption, PaymentMismatch> => {
  const others = resource.paymentOptions.flatMap((option, optionIndex) =>
    optionIndex === chosen.optionIndex ? [] : [{ optionIndex, option }]
  )
  const tried = [{ optionIndex: chosen.optionIndex, option: chosen.option }, ...others].map((candidate) => ({
    candidate,
    differs: disagreement(payment, candidate.option, context)
  }))
  const named = (c: PaidOption) => `${chosen.resourceId} option ${c.optionIndex}`
  const judged = tried.flatMap(({ candidate, differs }) =>
    differs !== undefined
      ? []
      : [
          {
            candidate,
            // Routing allowed its ranked option already; any other must pass the request's constraints too.
            refusal:
              candidate.optionIndex === chosen.optionIndex
                ? undefined
                : constraintRefusal(policy, chosen.providerId, candidate.option, context)
          }
        ]
  )
  const allowed = judged.find((j) => j.refusal === undefined)
  if (allowed !== undefined) return Either.right(allowed.candidate)
  const [refused] = judged
  if (refused !== undefined) {
    return Either.left(
      paymentMismatch(
        `the payment fits ${named(refused.candidate)}, which the request's constraints refuse: ${refused.refusal}`
      )
    )
  }
  // Nothing fits: report the option that agreed on the most fields, routing's ranked option on a tie.
  const misfits = tried.flatMap(({ candidate, differs }) => (differs === undefined ? [] : [{ candidate, ...differs }]))
  const closest = misfits.reduce((best, m) => (FIELDS.indexOf(m.field) > FIELDS.indexOf(best.field) ? m : best))
  const offered =
    closest.field === "amount" || closest.field === "maxAmount"
      ? `which charges at most ${closest.offered}`
      : `whose ${closest.field} is ${closest.offered}`
  return Either.left(
    paymentMismatch(`payment.${closest.field} ${closest.paid} disagrees with ${named(closest.candidate)}, ${offered}`)
  )
}

export interface ReceiptFacts extends EligibleChoice {
  readonly receiptId: ReceiptId
  readonly timestamp: string
  readonly request: CreateReceiptRequest["request"]
  readonly decision: RouteDecision
  readonly resource: ResourceRecord
  readonly paid: PaidOption
  readonly payment: UnsignedReceipt["payment"]
  readonly response: UnsignedReceipt["response"]
  readonly sellerReceipt: UnsignedReceipt["sellerReceipt"]
}

/** Links intent, routing decision, chosen service, payment and response hash: the body that gets signed. */
export const receiptBody = (facts: ReceiptFacts): UnsignedReceipt => {
  const { decision, selected, chosen, resource, paid } = facts
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
      payTo: paid.option.payTo,
      rank: chosen.rank,
      optionIndex: paid.optionIndex
    },
    payment: facts.payment,
    response: facts.response,
    ...(facts.sellerReceipt === undefined ? {} : { sellerReceipt: facts.sellerReceipt }),
    timestamp: facts.timestamp
  }
}
