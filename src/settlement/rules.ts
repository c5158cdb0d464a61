import type { ResourceEvidence } from "../domain/evidence.js"
import { BadRequest, PolicyDenied } from "../domain/errors.js"
import type { AgentPolicy, PolicyReason } from "../domain/policy.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { baseUnitsToUsd, type PaymentScheme, type StellarNetwork, usdMatchesBaseUnits } from "../domain/stellar.js"
import { evaluatePolicy, OPTION_CODES, type PolicyContext } from "../policy/evaluate.js"
import type { Transfer } from "./transfer.js"

/** What a settle asks to pay, read from its paymentRequirements once their shape is checked. */
export interface SettleTerms {
  readonly network: StellarNetwork
  readonly scheme: PaymentScheme
  readonly asset: string
  readonly payTo: string
  readonly amount: string
  /** The authorised ceiling of an `upto` payment, when the requirements state one. */
  readonly maxAmount: string | undefined
  readonly amountUsd: number | undefined
  readonly policy: AgentPolicy
}

const max = (...values: ReadonlyArray<bigint>) => values.reduce((a, b) => (b > a ? b : a))

/**
 * Worst-case spend in base units: the most the requirements allow (the ceiling for `upto`) or what
 * the signed transfer would move, whichever is more. The policy is judged on what would actually
 * be paid, not on what the request claims.
 */
export const worstCaseUnits = (terms: SettleTerms, transfer: Transfer): bigint =>
  max(BigInt(terms.amount), BigInt(terms.maxAmount ?? "0"), transfer.amount)

/** The payment as a catalog-shaped option, so the policy engine judges it like any other. */
export const paymentOption = (terms: SettleTerms, worstUnits: bigint, decimals: number): ResourcePaymentOption => {
  const worst = worstUnits.toString()
  const worstUsd = baseUnitsToUsd(worst, decimals)
  return {
    network: terms.network,
    scheme: terms.scheme,
    asset: terms.asset,
    payTo: terms.payTo,
    amount: worst,
    amountUsd: worstUsd,
    ...(terms.scheme === "upto" ? { maxAmount: worst, maxAmountUsd: worstUsd } : {})
  }
}

const mismatch = (error: string, message: string) => new BadRequest({ error, message })

/**
 * The signed transfer must pay what the requirements say: the asset's contract, the payee, and the
 * amount (exactly for `exact`, at most the ceiling for `upto`); a declared `amountUsd` must be the
 * same money as `amount` at the asset's decimals. Anything else is refused before a backend sees it.
 */
export const transferMismatch = (terms: SettleTerms, transfer: Transfer, decimals: number): BadRequest | undefined => {
  if (transfer.asset !== terms.asset) {
    return mismatch("TRANSFER_ASSET_MISMATCH", `the signed transfer pays in contract ${transfer.asset}, but the requirements ask for ${terms.asset}`)
  }
  if (transfer.to !== terms.payTo) {
    return mismatch("TRANSFER_RECIPIENT_MISMATCH", `the signed transfer pays ${transfer.to}, but the requirements name payTo ${terms.payTo}`)
  }
  const ceiling = BigInt(terms.scheme === "upto" ? (terms.maxAmount ?? terms.amount) : terms.amount)
  const amountOk = terms.scheme === "upto" ? transfer.amount <= ceiling : transfer.amount === ceiling
  if (!amountOk) {
    const expected = terms.scheme === "upto" ? `at most ${ceiling}` : `${ceiling}`
    return mismatch("TRANSFER_AMOUNT_MISMATCH", `the signed transfer moves ${transfer.amount} base units, but the requirements allow ${expected}`)
  }
  if (terms.amountUsd !== undefined && !usdMatchesBaseUnits(terms.amountUsd, terms.amount, decimals)) {
    return mismatch("AMOUNT_USD_MISMATCH", `amountUsd ${terms.amountUsd} is not ${terms.amount} base units at ${decimals} decimals`)
  }
  return undefined
}

/** A resource in the catalog that pays the payee, with its evidence when the reader has any. */
export interface PayeeCandidate {
  readonly providerId: string
  readonly evidence: ResourceEvidence | undefined
}

const denied = (reason: PolicyReason) => new PolicyDenied({ error: "POLICY_DENIED", code: reason.code, message: reason.message })

/**
 * The buyer policy against the payment itself: worst-case spend over `maxPricePerRequestUsd`, or a
 * network, asset or scheme the policy excludes. These do not depend on the payee, so the first
 * such reason is the refusal.
 */
export const paymentDenial = (policy: AgentPolicy, option: ResourcePaymentOption, context: PolicyContext): PolicyDenied | undefined => {
  const verdict = evaluatePolicy({ policy, providerId: option.payTo, option, evidence: undefined, context })
  const reason = verdict.reasons.find((r) => OPTION_CODES.has(r.code))
  return reason === undefined ? undefined : denied(reason)
}

/**
 * Whether the payee may be paid, from the evidence of the catalog resources that pay it:
 * - NO_VERIFICATION_EVIDENCE: no catalogued resource pays it, or none was ever probed;
 * - QUARANTINED: any resource paying it is quarantined (settling to it is refused whatever else
 *   pays the same account);
 * - PAYEE_NOT_VERIFIED: no valid x402 payment interface was ever observed at any of them;
 * - otherwise some resource must pass the buyer policy in full (provider, freshness, quality);
 *   when none does, the first resource's first reason is the refusal.
 */
export const payeeDenial = (
  policy: AgentPolicy,
  option: ResourcePaymentOption,
  candidates: ReadonlyArray<PayeeCandidate>,
  context: PolicyContext
): PolicyDenied | undefined => {
  const probed = candidates.filter((c) => c.evidence !== undefined && c.evidence.lastObservedAt !== null)
  if (probed.length === 0) {
    const why = candidates.length === 0 ? "no catalogued resource pays it" : "none of the resources paying it was ever probed"
    return denied({ code: "NO_VERIFICATION_EVIDENCE", message: `no probe evidence exists for payee ${option.payTo}: ${why}` })
  }
  const quarantined = candidates.find((c) => c.evidence?.status === "QUARANTINED")
  if (quarantined) {
    return denied({
      code: "QUARANTINED",
      message: `payee ${option.payTo} is refused: resource ${quarantined.evidence?.resourceId} paying it is QUARANTINED`
    })
  }
  if (!probed.some((c) => c.evidence?.validChallengeSeen === true)) {
    return denied({ code: "PAYEE_NOT_VERIFIED", message: `no valid x402 payment interface was ever observed at payee ${option.payTo}` })
  }
  const verdicts = probed.map((c) => evaluatePolicy({ policy, providerId: c.providerId, option, evidence: c.evidence, context }))
  if (verdicts.some((v) => v.decision === "ALLOW")) return undefined
  const reasons = verdicts.flatMap((v) => v.reasons)
  // evaluatePolicy answers ALLOW exactly when it has no reason, so every verdict here has one.
  return denied(reasons.find((r) => !OPTION_CODES.has(r.code)) ?? reasons[0]!)
}
