import type { Config } from "../config.js"
import type { ResourceEvidence } from "../domain/evidence.js"
import type { AgentPolicy, PolicyCode, PolicyDecision, PolicyReason } from "../domain/policy.js"
import { type ResourcePaymentOption, worstCaseUsd } from "../domain/resources.js"

/** What an evaluation needs from the deployment, apart from the policy and the thing judged. */
export interface PolicyContext {
  /** `verification.maxEvidenceAgeSeconds`; a policy's `maxVerificationAgeSeconds` may only tighten it. */
  readonly maxEvidenceAgeSeconds: number
  /** Symbol by asset id (the configured asset), so a policy may name `USDC` instead of its contract id. */
  readonly assetSymbols: ReadonlyMap<string, string>
  readonly now: Date
}

export const policyContext = (config: Pick<Config, "verification" | "asset">, now: Date): PolicyContext => ({
  maxEvidenceAgeSeconds: config.verification.maxEvidenceAgeSeconds,
  assetSymbols: new Map([[config.asset.assetContract, config.asset.symbol]]),
  now
})

/**
 * One payment option of one provider, judged against a buyer policy. Plain data on purpose: the
 * route and evaluate endpoints build it from a catalog record, settlement from the payment
 * requirements it is asked to pay.
 */
export interface PolicyInput {
  readonly policy: AgentPolicy
  readonly providerId: string
  readonly option: ResourcePaymentOption
  /** Evidence of the resource; undefined when the reader has none. */
  readonly evidence: ResourceEvidence | undefined
  readonly context: PolicyContext
}

export interface PolicyVerdict {
  readonly decision: PolicyDecision
  readonly reasons: ReadonlyArray<PolicyReason>
}

/** Codes about the payment option itself; the others are about the provider or its evidence. */
export const OPTION_CODES: ReadonlySet<PolicyCode> = new Set<PolicyCode>([
  "PRICE_EXCEEDS_LIMIT",
  "NETWORK_NOT_ALLOWED",
  "ASSET_NOT_ALLOWED",
  "SCHEME_NOT_ALLOWED"
])

/** Codes that say the service cannot judge yet, rather than that the answer is no. */
const EVIDENCE_GAP_CODES: ReadonlySet<PolicyCode> = new Set<PolicyCode>([
  "NO_VERIFICATION_EVIDENCE",
  "VERIFICATION_TOO_OLD"
])

/** Numbers as a person reads them: exact for prices, six significant digits for ratios. */
const ratio = (n: number) => String(Number(n.toPrecision(6)))
const list = (items: ReadonlyArray<string>) => (items.length === 0 ? "(none)" : items.join(", "))

const optionReasons = (policy: AgentPolicy, option: ResourcePaymentOption, context: PolicyContext) => {
  const reasons: Array<PolicyReason> = []
  const worst = worstCaseUsd(option)
  if (policy.maxPricePerRequestUsd !== undefined && worst > policy.maxPricePerRequestUsd) {
    const what = option.scheme === "upto" ? "worst-case spend (the upto ceiling)" : "worst-case spend"
    reasons.push({
      code: "PRICE_EXCEEDS_LIMIT",
      message: `${what} ${worst} USD exceeds the limit ${policy.maxPricePerRequestUsd} USD`
    })
  }
  if (policy.networks !== undefined && !policy.networks.includes(option.network)) {
    reasons.push({
      code: "NETWORK_NOT_ALLOWED",
      message: `network ${option.network} is not among the allowed networks: ${list(policy.networks)}`
    })
  }
  const symbol = context.assetSymbols.get(option.asset)
  if (policy.assets !== undefined && !policy.assets.some((a) => a === option.asset || a === symbol)) {
    const named = symbol === undefined ? option.asset : `${symbol} (${option.asset})`
    reasons.push({
      code: "ASSET_NOT_ALLOWED",
      message: `asset ${named} is not among the allowed assets: ${list(policy.assets)}`
    })
  }
  if (policy.schemes !== undefined && !policy.schemes.includes(option.scheme)) {
    reasons.push({
      code: "SCHEME_NOT_ALLOWED",
      message: `scheme ${option.scheme} is not among the allowed schemes: ${list(policy.schemes)}`
    })
  }
  return reasons
}

/** Age limit in seconds: the configured one, or the policy's when it is stricter. */
const ageLimit = (policy: AgentPolicy, context: PolicyContext) =>
  Math.min(context.maxEvidenceAgeSeconds, policy.maxVerificationAgeSeconds ?? Number.POSITIVE_INFINITY)

/** Checks judged on current evidence: liveness, payment interface, measured quality. */
const measuredReasons = (policy: AgentPolicy, option: ResourcePaymentOption, evidence: ResourceEvidence) => {
  const reasons: Array<PolicyReason> = []
  if (evidence.status === "OFFLINE") {
    reasons.push({
      code: "SERVICE_OFFLINE",
      message: "the service is OFFLINE: its latest probes failed to connect or timed out"
    })
  }
  if (!evidence.validChallengeSeen) {
    reasons.push({
      code: "PAYEE_NOT_VERIFIED",
      message: `no valid x402 payment interface was ever observed at the resource paying ${option.payTo}`
    })
  }
  const { reliability, confidence } = evidence.metrics
  if (policy.minProviderReliability !== undefined && reliability < policy.minProviderReliability) {
    reasons.push({
      code: "RELIABILITY_LIMIT",
      message: `reliability ${ratio(reliability)} is below the minimum ${policy.minProviderReliability}`
    })
  }
  if (policy.minConfidence !== undefined && confidence < policy.minConfidence) {
    reasons.push({
      code: "CONFIDENCE_LIMIT",
      message: `confidence ${ratio(confidence)} is below the minimum ${policy.minConfidence}`
    })
  }
  if (policy.requireTransactionVerified === true && !evidence.transactionVerified) {
    reasons.push({
      code: "TRANSACTION_NOT_VERIFIED",
      message: "the policy requires a verified transaction and no settlement to this resource has been verified"
    })
  }
  return reasons
}

const evidenceReasons = (
  policy: AgentPolicy,
  option: ResourcePaymentOption,
  evidence: ResourceEvidence | undefined,
  context: PolicyContext
): Array<PolicyReason> => {
  const reasons: Array<PolicyReason> = []
  if (evidence?.status === "QUARANTINED") {
    reasons.push({
      code: "QUARANTINED",
      message: "the resource is QUARANTINED: its challenge contradicted the catalog or an operator withdrew it"
    })
  }
  if (evidence === undefined || evidence.lastObservedAt === null) {
    return [...reasons, { code: "NO_VERIFICATION_EVIDENCE", message: "no probe evidence exists for this resource" }]
  }
  const ageSeconds = Math.floor((context.now.getTime() - Date.parse(evidence.lastObservedAt)) / 1000)
  const limit = ageLimit(policy, context)
  // Written as a negation so an unreadable timestamp (NaN) counts as too old: fail closed.
  if (!(ageSeconds <= limit)) {
    reasons.push({
      code: "VERIFICATION_TOO_OLD",
      message: `the newest evidence is ${ageSeconds} s old (${evidence.lastObservedAt}), over the limit of ${limit} s`
    })
    return reasons
  }
  return [...reasons, ...measuredReasons(policy, option, evidence)]
}

/**
 * Judges one payment option against a policy and lists every failing rule, not just the first.
 *
 * Which outcome wins when several kinds of reasons apply:
 * - DENY whenever any reason other than an evidence gap applies: the option or provider breaks the
 *   policy (price, network, asset, scheme, denied provider), the resource is quarantined, or current
 *   evidence falls short (offline, payee never verified, reliability, confidence, transaction). No
 *   amount of new evidence can lift a policy mismatch, and current evidence has already said no.
 * - otherwise INSUFFICIENT_DATA when probe evidence is missing (NO_VERIFICATION_EVIDENCE) or older
 *   than the age limit (VERIFICATION_TOO_OLD): the service cannot judge the resource yet, and a
 *   fresh probe may turn the answer into ALLOW.
 * - otherwise ALLOW.
 * Measured checks run only on current evidence: on missing or stale evidence their figures are
 * zeros or history, and reporting them would turn every unprobed resource into a DENY. A quarantine
 * is a standing verdict rather than a measurement, so it counts on evidence of any age.
 */
export const evaluatePolicy = (input: PolicyInput): PolicyVerdict => {
  const { policy, option, context } = input
  const reasons: Array<PolicyReason> = optionReasons(policy, option, context)
  // A buyer may name a provider by its catalog id or by the account it pays.
  if (policy.denyProviders?.includes(input.providerId)) {
    reasons.push({
      code: "PROVIDER_DENIED",
      message: `provider "${input.providerId}" is in the policy's denyProviders`
    })
  } else if (policy.denyProviders?.includes(option.payTo)) {
    reasons.push({ code: "PROVIDER_DENIED", message: `payee ${option.payTo} is in the policy's denyProviders` })
  }
  reasons.push(...evidenceReasons(policy, option, input.evidence, context))
  const decision: PolicyDecision =
    reasons.length === 0 ? "ALLOW" : reasons.every((r) => EVIDENCE_GAP_CODES.has(r.code)) ? "INSUFFICIENT_DATA" : "DENY"
  return { decision, reasons }
}

/** How favourable a decision is: ALLOW, then INSUFFICIENT_DATA, then DENY. */
const preference: Record<PolicyDecision, number> = { ALLOW: 0, INSUFFICIENT_DATA: 1, DENY: 2 }

/** Index of the most favourable verdict (the lowest index among equals); -1 when there is none. */
export const mostFavourable = (verdicts: ReadonlyArray<PolicyVerdict>): number =>
  verdicts.reduce(
    (best, next, index) =>
      best < 0 || preference[next.decision] < preference[verdicts[best]!.decision] ? index : best,
    -1
  )
