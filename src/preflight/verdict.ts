import type { PayeeEvidence } from "../domain/evidence.js"
import type { ResourceId } from "../domain/ids.js"
import type { PolicyCode } from "../domain/policy.js"
import type {
  JudgedOption,
  PreflightEvidence,
  PreflightPolicy,
  PreflightRating,
  PreflightReason,
  PreflightVerdict
} from "../domain/preflight.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { evaluatePolicy, type PolicyContext } from "../policy/evaluate.js"
import { advertisedPrice, exceeds } from "../verification/catalogMatch.js"
import type { Deployment } from "../x402/challenge.js"

/** What a verdict needs from the deployment besides the policy context. */
export interface PreflightContext extends PolicyContext {
  readonly deployment: Deployment
  /** `probes.priceTolerance`: above the advertised price by more, a probe quarantines; preflight denies. */
  readonly priceTolerance: number
}

/** The option a client is about to pay, in the shape a catalog option has (USD from the deployment's decimals). */
export interface Judged extends JudgedOption {
  readonly maxAmount: string | null
}

export interface PreflightInput {
  readonly option: Judged
  /** The entries at the URL paid (listed, quarantined or validated), with their evidence. */
  readonly atUrl: ReadonlyArray<PayeeEvidence>
  /** Other entries of the same origin, with their evidence. */
  readonly atOrigin: ReadonlyArray<PayeeEvidence>
  readonly policy: PreflightPolicy
  readonly context: PreflightContext
}

export interface Verdict {
  readonly verdict: PreflightVerdict
  readonly rating: PreflightRating
  readonly reasons: ReadonlyArray<PreflightReason>
}

/** Policy codes that mean "cannot judge yet": a buyer is warned, not stopped. */
const EVIDENCE_GAPS: ReadonlySet<PolicyCode> = new Set<PolicyCode>(["NO_VERIFICATION_EVIDENCE", "VERIFICATION_TOO_OLD"])

const pays = (entry: PayeeEvidence, payTo: string) => entry.record.paymentOptions.some((o) => o.payTo === payTo)
/** Its payees are observed ones: probes saw a valid challenge there (a payee that contradicts the catalog quarantines it). */
const observedPaying = (entries: ReadonlyArray<PayeeEvidence>, payTo: string) =>
  entries.filter((e) => e.evidence.validChallengeSeen && pays(e, payTo))

const samePayment = (a: ResourcePaymentOption, o: Judged) =>
  a.network === o.network && a.scheme === o.scheme && a.asset === o.asset && a.payTo === o.payTo

const payeesOf = (entries: ReadonlyArray<PayeeEvidence>) => [
  ...new Set(
    entries.filter((e) => e.evidence.validChallengeSeen).flatMap((e) => e.record.paymentOptions.map((o) => o.payTo))
  )
]

/** Trusted first, then the higher level, then by id: the entry whose evidence stands for the URL. */
const best = (entries: ReadonlyArray<PayeeEvidence>): PayeeEvidence | undefined =>
  [...entries].sort(
    (a, b) =>
      Number(b.record.listing.trusted) - Number(a.record.listing.trusted) ||
      b.evidence.verificationLevel - a.evidence.verificationLevel ||
      (a.record.resource.id < b.record.resource.id ? -1 : 1)
  )[0]

const idOf = (entry: PayeeEvidence | undefined): ResourceId | null => entry?.record.resource.id ?? null

const reason = (
  code: PreflightReason["code"],
  severity: PreflightReason["severity"],
  message: string,
  at: PayeeEvidence | undefined | null
): PreflightReason => ({
  code,
  severity,
  message,
  resourceId: at === null ? null : idOf(at)
})

/** Whether probes saw the payee for this URL, at its origin only, or nowhere. */
const payeeReasons = (input: PreflightInput, rating: PreflightRating): Array<PreflightReason> => {
  const { option, atUrl, atOrigin, policy } = input
  if (observedPaying(atUrl, option.payTo).length > 0) return []
  const atOriginPaying = observedPaying(atOrigin, option.payTo)
  if (atOriginPaying.length > 0) {
    const other = best(atOriginPaying)!
    return [
      reason(
        "PAYEE_OBSERVED_AT_ORIGIN_ONLY",
        "WARN",
        `probes saw ${option.payTo} at ${other.record.resource.url} on this origin, not at this URL`,
        other
      )
    ]
  }
  if (rating === "UNRATED") {
    return policy.allowUnknownSellers === true
      ? [
          reason(
            "UNRATED",
            "WARN",
            "Sextant knows nothing of this URL or its origin; the policy allows unknown sellers",
            null
          )
        ]
      : [
          reason(
            "PAYEE_NOT_OBSERVED",
            "DENY",
            `no probe of this URL or its origin ever saw ${option.payTo}, and Sextant knows nothing of either (the policy may allow unknown sellers)`,
            null
          )
        ]
  }
  const seen = payeesOf(rating === "URL" ? atUrl : atOrigin)
  const where = rating === "URL" ? "this URL" : "this origin"
  // A URL whose own probes saw another payee contradicts itself: no policy lifts that. An unknown
  // URL on a known origin is an unknown seller, which a policy may allow.
  if (rating === "ORIGIN" && policy.allowUnknownSellers === true) {
    return [
      reason(
        "UNRATED",
        "WARN",
        `this URL is not rated and its origin's probes never saw ${option.payTo}; the policy allows unknown sellers`,
        null
      )
    ]
  }
  return [
    reason(
      "PAYEE_NOT_OBSERVED",
      "DENY",
      `probes of ${where} never saw ${option.payTo}; they saw ${seen.length === 0 ? "no payee at all" : seen.join(", ")}`,
      best(rating === "URL" ? atUrl : atOrigin)
    )
  ]
}

/** The price asked against what the URL's entry advertises and what its probes last observed. */
const priceReasons = (
  option: Judged,
  subject: PayeeEvidence | undefined,
  tolerance: number
): Array<PreflightReason> => {
  if (subject === undefined || option.amountUsd === null) return []
  const reasons: Array<PreflightReason> = []
  const asked = option.maxAmount ?? option.amount
  const advertised = subject.record.paymentOptions.filter((a) => samePayment(a, option)).map(advertisedPrice)
  const cheapest = advertised.sort((x, y) => (BigInt(x) < BigInt(y) ? -1 : 1))[0]
  if (cheapest !== undefined && BigInt(asked) > BigInt(cheapest)) {
    const past = exceeds(asked, cheapest, tolerance)
    reasons.push(
      reason(
        "PRICE_ABOVE_ADVERTISED",
        past ? "DENY" : "WARN",
        `the option asks ${asked} base units; the catalog advertises ${cheapest}${past ? `, more than ${tolerance * 100}% above it` : ""}`,
        subject
      )
    )
  }
  const observed = subject.evidence.metrics.observedPriceUsd
  // A millionth of a dollar of slack: observed prices are stored in USD, the asked one converted.
  if (observed !== null && option.amountUsd > observed + 1e-6) {
    reasons.push(
      reason(
        "PRICE_ABOVE_OBSERVED",
        "WARN",
        `the option asks ${option.amountUsd} USD; the latest probe observed ${observed} USD`,
        subject
      )
    )
  }
  return reasons
}

/** The option as policy evaluation takes it: a catalog option of the network and scheme it names. */
const asCatalogOption = (option: Judged): ResourcePaymentOption =>
  ({
    network: option.network,
    scheme: option.scheme,
    asset: option.asset,
    amount: option.amount,
    amountUsd: option.amountUsd ?? 0,
    ...(option.maxAmount === null ? {} : { maxAmount: option.maxAmount, maxAmountUsd: option.amountUsd ?? 0 }),
    payTo: option.payTo
  }) as ResourcePaymentOption

/** The buyer's policy through the same evaluation routes and `/v1/policies/evaluate` use. */
const policyReasons = (
  input: PreflightInput,
  subject: PayeeEvidence | undefined,
  providerId: string
): Array<PreflightReason> => {
  const verdict = evaluatePolicy({
    policy: input.policy,
    providerId,
    option: asCatalogOption(input.option),
    evidence: subject?.evidence,
    context: input.context
  })
  return verdict.reasons.map((r) =>
    reason(r.code, EVIDENCE_GAPS.has(r.code) ? "WARN" : "DENY", r.message, subject ?? null)
  )
}

/** Quarantines and standing beyond what policy evaluation reports. */
const standingReasons = (input: PreflightInput, subject: PayeeEvidence | undefined): Array<PreflightReason> => {
  const reasons: Array<PreflightReason> = []
  // An operator's quarantine of any entry paying the payee refuses it, as settlement does.
  const withdrawn = [...input.atUrl, ...input.atOrigin].find(
    (e) => e.evidence.operatorQuarantined === true && pays(e, input.option.payTo)
  )
  if (withdrawn !== undefined && withdrawn !== subject) {
    reasons.push(
      reason(
        "QUARANTINED",
        "DENY",
        `an operator quarantined ${withdrawn.record.resource.id}, which pays ${input.option.payTo}`,
        withdrawn
      )
    )
  }
  if (subject?.evidence.status === "DEGRADED") {
    reasons.push(
      reason("DEGRADED", "WARN", "the resource is DEGRADED: too few of its recent probes were healthy", subject)
    )
  }
  return reasons
}

const severityRank = { ALLOW: 0, WARN: 1, DENY: 2 } as const

export const worst = (reasons: ReadonlyArray<PreflightReason>): PreflightVerdict =>
  reasons.reduce<PreflightVerdict>((v, r) => (severityRank[r.severity] > severityRank[v] ? r.severity : v), "ALLOW")

/**
 * Judges a payment a client is about to make, from what probes observed:
 * - the payee: observed at this URL, else at its origin (WARN), else DENY `PAYEE_NOT_OBSERVED`
 *   (WARN `UNRATED` when the policy allows unknown sellers and the URL itself is unknown);
 * - the price against the URL's advertised price (DENY past the quarantine tolerance) and the
 *   latest observed one (WARN);
 * - quarantines (operator's of any entry paying the payee), DEGRADED, and the buyer's policy
 *   through `evaluatePolicy` (its evidence gaps WARN, everything else it reports DENY);
 * - a network or asset this deployment does not rate: DENY `UNSUPPORTED_PAYMENT`.
 * The verdict is the most severe reason; ALLOW with none.
 */
export const preflightVerdict = (input: PreflightInput): Verdict => {
  const { option, atUrl, atOrigin, context } = input
  const rating: PreflightRating = atUrl.length > 0 ? "URL" : atOrigin.length > 0 ? "ORIGIN" : "UNRATED"
  const reasons: Array<PreflightReason> = []
  if (option.network !== context.deployment.network || option.asset !== context.deployment.assetContract) {
    reasons.push(
      reason(
        "UNSUPPORTED_PAYMENT",
        "DENY",
        `Sextant rates ${context.deployment.assetContract} on ${context.deployment.network} only; the option pays ${option.asset} on ${option.network}`,
        null
      )
    )
  }
  reasons.push(...payeeReasons(input, rating))
  // The entry that stands for the URL: one paying this payee, else any at the URL (its evidence still speaks of the URL).
  const subject = best(atUrl.filter((e) => pays(e, option.payTo))) ?? best(atUrl)
  const provider = subject ?? best(atOrigin.filter((e) => pays(e, option.payTo)))
  reasons.push(...priceReasons(option, subject, context.priceTolerance))
  reasons.push(...standingReasons(input, subject))
  reasons.push(...policyReasons(input, subject, provider?.record.provider.id ?? ""))
  return { verdict: worst(reasons), rating, reasons }
}

/** The evidence shown with a verdict: every entry read, URL first. */
export const evidenceOf = (
  atUrl: ReadonlyArray<PayeeEvidence>,
  atOrigin: ReadonlyArray<PayeeEvidence>
): Array<PreflightEvidence> =>
  [...atUrl.map((e) => [e, "url"] as const), ...atOrigin.map((e) => [e, "origin"] as const)].map(
    ([{ record, evidence }, match]) => ({
      resourceId: record.resource.id,
      url: record.resource.url,
      match,
      providerId: record.provider.id,
      trusted: record.listing.trusted,
      listed: record.listing.listed,
      status: evidence.status,
      verificationLevel: evidence.verificationLevel,
      operatorQuarantined: evidence.operatorQuarantined === true,
      validChallengeSeen: evidence.validChallengeSeen,
      reliability: evidence.metrics.reliability,
      confidence: evidence.metrics.confidence,
      observedPriceUsd: evidence.metrics.observedPriceUsd,
      lastObservedAt: evidence.lastObservedAt,
      paymentOptions: record.paymentOptions
    })
  )
