import {
  AmountUsdMismatch,
  PolicyDenied,
  TransferAmountMismatch,
  TransferAssetMismatch,
  TransferRecipientMismatch
} from "../domain/errors.js"
import type { ResourceEvidence } from "../domain/evidence.js"
import type { AgentPolicy, PolicyCode, PolicyReason } from "../domain/policy.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { baseUnitsToUsd, type PaymentScheme, type StellarNetwork, usdMatchesBaseUnits } from "../domain/stellar.js"
import type { Transfer } from "../ledger/transfer.js"
import { evaluatePolicy, OPTION_CODES, type PolicyContext } from "../policy/evaluate.js"

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

/**
 * The signed transfer must pay what the requirements say: the asset's contract, the payee, and the
 * amount (exactly for `exact`, at most the ceiling for `upto`); a declared `amountUsd` must be the
 * same money as `amount` at the asset's decimals. Anything else is refused before a backend sees it.
 */
export const transferMismatch = (
  terms: SettleTerms,
  transfer: Transfer,
  decimals: number
): TransferAssetMismatch | TransferRecipientMismatch | TransferAmountMismatch | AmountUsdMismatch | undefined => {
  if (transfer.asset !== terms.asset) {
    return new TransferAssetMismatch({
      message: `the signed transfer pays in contract ${transfer.asset}, but the requirements ask for ${terms.asset}`
    })
  }
  if (transfer.to !== terms.payTo) {
    return new TransferRecipientMismatch({
      message: `the signed transfer pays ${transfer.to}, but the requirements name payTo ${terms.payTo}`
    })
  }
  const ceiling = BigInt(terms.scheme === "upto" ? (terms.maxAmount ?? terms.amount) : terms.amount)
  // A signed amount is an i128: a negative `upto` transfer would be "at most the ceiling" too.
  const amountOk =
    terms.scheme === "upto" ? transfer.amount > 0n && transfer.amount <= ceiling : transfer.amount === ceiling
  if (!amountOk) {
    const expected = terms.scheme === "upto" ? `more than 0 and at most ${ceiling}` : `${ceiling}`
    return new TransferAmountMismatch({
      message: `the signed transfer moves ${transfer.amount} base units, but the requirements allow ${expected}`
    })
  }
  if (terms.amountUsd !== undefined && !usdMatchesBaseUnits(terms.amountUsd, terms.amount, decimals)) {
    return new AmountUsdMismatch({
      message: `amountUsd ${terms.amountUsd} is not ${terms.amount} base units at ${decimals} decimals`
    })
  }
  return undefined
}

/**
 * A resource in the catalog that pays the payee, with its evidence when the reader has any, its
 * URL (to match the resource a payment names) and whether it is trusted (docs/trust.md).
 */
export interface PayeeCandidate {
  readonly providerId: string
  readonly evidence: ResourceEvidence | undefined
  readonly url: string
  readonly trusted: boolean
}

/**
 * A quarantine that refuses the payee itself, whatever resource is paid: an operator's on any
 * resource paying it, or an automatic one on a trusted resource. An automatic quarantine of an
 * entry anyone could add (registration, import, bazaar, validate) stays that entry's own, or a
 * stranger could block every settle to someone else's address by serving a contradicting 402.
 * MetricsRepo.payeeShortlist holds the same rule in SQL (its "quarantined" part).
 */
export const blocksPayee = (candidate: PayeeCandidate): boolean =>
  candidate.evidence?.status === "QUARANTINED" && (candidate.trusted || candidate.evidence.operatorQuarantined === true)

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** The URL a payment says it pays for: `paymentPayload.resource.url` (v2), else the v1 requirements' `resource`. */
export const paidUrlOf = (request: {
  readonly paymentPayload: unknown
  readonly paymentRequirements: unknown
}): string | undefined => {
  const payload = request.paymentPayload
  const v2 = isObject(payload) && isObject(payload.resource) ? payload.resource.url : undefined
  const v1 = isObject(request.paymentRequirements) ? request.paymentRequirements.resource : undefined
  const url = typeof v2 === "string" ? v2 : v1
  return typeof url === "string" && url !== "" ? url : undefined
}

/**
 * The candidates a settle is judged on: those at the URL the payment names
 * (`paymentPayload.resource.url`) when any is, else all. MetricsRepo.payeeShortlist reads the
 * named ones first for the same reason.
 */
export const judgedCandidates = (
  candidates: ReadonlyArray<PayeeCandidate>,
  paidUrl: string | undefined
): ReadonlyArray<PayeeCandidate> => {
  const named = paidUrl === undefined ? [] : candidates.filter((c) => c.url === paidUrl)
  return named.length > 0 ? named : candidates
}

/**
 * A buyer policy and whose it is: the request's `servicePolicy`, or the policy configured for the
 * API key's principal. Every one must pass; a refusal names the one that refused.
 */
export interface NamedPolicy {
  readonly name: string
  readonly policy: AgentPolicy
}

/** A reason and the policy behind it; `policy` is undefined when evidence alone refuses, whatever the policy. */
interface Refusal {
  readonly reason: PolicyReason
  readonly policy: NamedPolicy | undefined
}

const denied = ({ reason, policy }: Refusal) =>
  new PolicyDenied({
    code: reason.code,
    message: policy === undefined ? reason.message : `${policy.name}: ${reason.message}`
  })

/** A policy's limit behind a code, oriented so that the smaller number is the tighter limit. */
const limitOf = (code: PolicyCode, policy: AgentPolicy): number | undefined => {
  switch (code) {
    case "PRICE_EXCEEDS_LIMIT":
      return policy.maxPricePerRequestUsd
    case "RELIABILITY_LIMIT":
      return policy.minProviderReliability === undefined ? undefined : -policy.minProviderReliability
    case "CONFIDENCE_LIMIT":
      return policy.minConfidence === undefined ? undefined : -policy.minConfidence
    case "VERIFICATION_TOO_OLD":
      return policy.maxVerificationAgeSeconds
    default:
      return undefined
  }
}

/**
 * The refusal to answer with: the first whose code `prefer` accepts (else the first), and among
 * the refusals with that code the one from the tightest limit, since it is the one that binds.
 */
const pick = (refusals: ReadonlyArray<Refusal>, prefer: (code: PolicyCode) => boolean): Refusal | undefined => {
  const chosen = refusals.find((r) => prefer(r.reason.code)) ?? refusals[0]
  if (chosen === undefined) return undefined
  const tightness = (r: Refusal) => (r.policy === undefined ? undefined : limitOf(r.reason.code, r.policy.policy))
  return refusals
    .filter((r) => r.reason.code === chosen.reason.code)
    .reduce((tightest, r) => ((tightness(r) ?? Infinity) < (tightness(tightest) ?? Infinity) ? r : tightest), chosen)
}

/**
 * The buyer policies against the payment itself: worst-case spend over `maxPricePerRequestUsd`, or
 * a network, asset or scheme a policy excludes. These do not depend on the payee, so the first
 * such reason of each policy counts; with several, the tightest limit is the refusal.
 */
export const paymentDenial = (
  policies: ReadonlyArray<NamedPolicy>,
  option: ResourcePaymentOption,
  context: PolicyContext
): PolicyDenied | undefined => {
  const refusals = policies.flatMap((named) => {
    const verdict = evaluatePolicy({
      policy: named.policy,
      providerId: option.payTo,
      option,
      evidence: undefined,
      context
    })
    const reason = verdict.reasons.find((r) => OPTION_CODES.has(r.code))
    return reason === undefined ? [] : [{ reason, policy: named }]
  })
  const refusal = pick(refusals, () => true)
  return refusal === undefined ? undefined : denied(refusal)
}

/**
 * Whether the payee may be paid, from the evidence of the listed resources that pay it (and any an
 * operator quarantined), judged on the resource being paid when the payment names one
 * (`judgedCandidates`):
 * - PROVIDER_DENIED: any of them belongs to a provider a policy denies (fails closed: another
 *   entry paying the same address does not launder it);
 * - NO_VERIFICATION_EVIDENCE: no catalogued resource pays it, or none was ever probed;
 * - QUARANTINED: a quarantine that refuses the payee (`blocksPayee`: an operator's, or a trusted
 *   resource's), whatever else pays the same account;
 * - PAYEE_NOT_VERIFIED: no valid x402 payment interface was ever observed at any of them;
 * - otherwise some resource must pass every buyer policy in full (provider, freshness, quality,
 *   its own quarantine); when none does, the refusal is the first reason about the provider or
 *   its evidence. It names the policy that refused, unless the evidence refuses under any policy.
 * Then, unless `untrustedStanding` (the operator's `ingestion.untrustedPayeeStanding`), the same
 * judgement over the trusted resources alone must pass too: standing rests on entries a stranger
 * cannot add, so a registration, import or bazaar entry naming a payee can refuse settles to it
 * (its named entry, its denied provider) but never open them (NO_VERIFICATION_EVIDENCE when no
 * trusted resource pays it). MetricsRepo.payeeShortlist reads the few resources this needs in
 * SQL: keep both in step.
 */
const judgePayee = (
  policies: ReadonlyArray<NamedPolicy>,
  option: ResourcePaymentOption,
  all: ReadonlyArray<PayeeCandidate>,
  candidates: ReadonlyArray<PayeeCandidate>,
  context: PolicyContext,
  which: "" | "trusted "
): PolicyDenied | undefined => {
  // Fails closed: one listed resource of a denied provider paying the address denies it, whatever else pays it.
  for (const { name, policy } of policies) {
    const deniedOne = all.find((c) => policy.denyProviders?.includes(c.providerId) === true)
    if (deniedOne) {
      return denied({
        reason: {
          code: "PROVIDER_DENIED",
          message: `payee ${option.payTo} is paid through resource ${deniedOne.evidence?.resourceId ?? ""} of provider "${deniedOne.providerId}", which ${name} denies`
        },
        policy: { name, policy }
      })
    }
  }
  const probed = candidates.filter((c) => c.evidence !== undefined && c.evidence.lastObservedAt !== null)
  if (probed.length === 0) {
    const why =
      (candidates.length === 0
        ? `no listed ${which}resource pays it`
        : `none of the ${which}resources paying it was ever probed`) +
      (which === ""
        ? ""
        : " (entries from registration, import or bazaar give no standing unless ingestion.untrustedPayeeStanding is set)")
    return denied({
      reason: {
        code: "NO_VERIFICATION_EVIDENCE",
        message: `no probe evidence exists for payee ${option.payTo}: ${why}`
      },
      policy: undefined
    })
  }
  const quarantined = all.find(blocksPayee)
  if (quarantined) {
    return denied({
      reason: {
        code: "QUARANTINED",
        message: `payee ${option.payTo} is refused: resource ${quarantined.evidence?.resourceId} paying it is QUARANTINED`
      },
      policy: undefined
    })
  }
  if (!probed.some((c) => c.evidence?.validChallengeSeen === true)) {
    return denied({
      reason: {
        code: "PAYEE_NOT_VERIFIED",
        message: `no valid x402 payment interface was ever observed at payee ${option.payTo}`
      },
      policy: undefined
    })
  }
  const judge = (candidate: PayeeCandidate, policy: NamedPolicy | undefined) => ({
    policy,
    verdict: evaluatePolicy({
      policy: policy?.policy ?? {},
      providerId: candidate.providerId,
      option,
      evidence: candidate.evidence,
      context
    })
  })
  const refusals: Array<Refusal> = []
  for (const candidate of probed) {
    // First under no policy at all: what the evidence refuses whatever the policy is nobody's limit.
    const baseline = judge(candidate, undefined)
    const verdicts = [baseline, ...policies.map((policy) => judge(candidate, policy))]
    if (verdicts.every((v) => v.verdict.decision === "ALLOW")) return undefined
    const evidenceCodes = new Set(baseline.verdict.reasons.map((r) => r.code))
    for (const { policy, verdict } of verdicts) {
      for (const reason of verdict.reasons)
        refusals.push({ reason, policy: evidenceCodes.has(reason.code) ? undefined : policy })
    }
  }
  // evaluatePolicy answers ALLOW exactly when it has no reason, so some candidate gave one.
  return denied(pick(refusals, (code) => !OPTION_CODES.has(code))!)
}

/** Whether the payee may be paid: `judgePayee` over every candidate, then over the trusted ones alone unless `untrustedStanding`. */
export const payeeDenial = (
  policies: ReadonlyArray<NamedPolicy>,
  option: ResourcePaymentOption,
  all: ReadonlyArray<PayeeCandidate>,
  context: PolicyContext,
  paidUrl?: string,
  untrustedStanding = false
): PolicyDenied | undefined =>
  judgePayee(policies, option, all, judgedCandidates(all, paidUrl), context, "") ??
  (untrustedStanding
    ? undefined
    : judgePayee(
        policies,
        option,
        all,
        judgedCandidates(
          all.filter((c) => c.trusted),
          paidUrl
        ),
        context,
        "trusted "
      ))
