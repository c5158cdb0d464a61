import type { ResourceEvidence } from "../domain/evidence.js"
import { PAGE_LIMITS } from "../domain/pagination.js"
import type { PolicyReason } from "../domain/policy.js"
import type { ResourcePaymentOption, ResourceRecord } from "../domain/resources.js"
import { worstCaseUsd } from "../domain/resources.js"
import type { OptimizeFor, RankedCandidate, RejectedCandidate, RouteDecision, RouteRequest } from "../domain/routes.js"
import {
  evaluatePolicy,
  mostFavourable,
  OPTION_CODES,
  type PolicyContext,
  type PolicyVerdict
} from "../policy/evaluate.js"

/**
 * Weights of the `balanced` score: a provider that answers and takes payment matters most, then
 * how much evidence backs that, then price, then speed. Each term is in [0, 1], so the score is too.
 */
export const BALANCED_WEIGHTS = { reliability: 0.4, confidence: 0.2, price: 0.25, latency: 0.15 } as const

export interface RouteInput {
  readonly request: RouteRequest
  /** Resources to consider; those without the requested capability are ignored. */
  readonly catalog: ReadonlyArray<ResourceRecord>
  /** Maintained evidence by resource id; a missing entry means no evidence. */
  readonly evidence: ReadonlyMap<string, ResourceEvidence>
  readonly context: PolicyContext
  /** When the evidence was read. */
  readonly metricsSnapshotAt: string
}

/** An option that passed the policy, with the figures ranking uses. */
interface Survivor {
  readonly record: ResourceRecord
  readonly optionIndex: number
  readonly option: ResourcePaymentOption
  readonly evidence: ResourceEvidence
  readonly worstCaseUsd: number
}

/** Works for strings and for numbers including Infinity (where subtraction would give NaN). */
const ascending = <T extends string | number>(a: T, b: T) => (a < b ? -1 : a > b ? 1 : 0)
const latencyOrLast = (s: Survivor) => s.evidence.metrics.p95LatencyMs ?? Number.POSITIVE_INFINITY
const minimum = (values: ReadonlyArray<number>) => values.reduce((m, v) => Math.min(m, v), Number.POSITIVE_INFINITY)

/**
 * Share of the best figure among the survivors, so 1 is the best and 0 the worst possible:
 * a free option or an instant answer scores 1, an unknown latency 0.
 */
const relativeToBest = (value: number | null, best: number) => (value === null ? 0 : value === 0 ? 1 : best / value)

/**
 * Scores (higher is better, in [0, 1]) and the order of survivors under each `optimizeFor`:
 * - cheapest: worst-case price ascending; score = cheapest price / this price.
 * - fastest: p95 latency ascending, unknown latency last; score = best p95 / this p95 (0 unknown).
 * - reliable: reliability descending, then confidence descending; score = reliability.
 * - balanced: the BALANCED_WEIGHTS sum of reliability, confidence, price score and latency score.
 * Every order then breaks ties by resource id and option index, so the answer never depends on
 * the catalog's order.
 */
const ranker = (optimizeFor: OptimizeFor, survivors: ReadonlyArray<Survivor>) => {
  const cheapest = minimum(survivors.map((s) => s.worstCaseUsd))
  const fastest = minimum(survivors.map(latencyOrLast))
  const priceScore = (s: Survivor) => relativeToBest(s.worstCaseUsd, cheapest)
  const latencyScore = (s: Survivor) => relativeToBest(s.evidence.metrics.p95LatencyMs, fastest)
  const score = (s: Survivor): number => {
    const { reliability, confidence } = s.evidence.metrics
    switch (optimizeFor) {
      case "cheapest":
        return priceScore(s)
      case "fastest":
        return latencyScore(s)
      case "reliable":
        return reliability
      case "balanced":
        return (
          BALANCED_WEIGHTS.reliability * reliability +
          BALANCED_WEIGHTS.confidence * confidence +
          BALANCED_WEIGHTS.price * priceScore(s) +
          BALANCED_WEIGHTS.latency * latencyScore(s)
        )
    }
  }
  const primary = (a: Survivor, b: Survivor): number => {
    switch (optimizeFor) {
      case "cheapest":
        return ascending(a.worstCaseUsd, b.worstCaseUsd)
      case "fastest":
        return ascending(latencyOrLast(a), latencyOrLast(b))
      case "reliable":
        return (
          ascending(b.evidence.metrics.reliability, a.evidence.metrics.reliability) ||
          ascending(b.evidence.metrics.confidence, a.evidence.metrics.confidence)
        )
      case "balanced":
        return ascending(score(b), score(a))
    }
  }
  const compare = (a: Survivor, b: Survivor) =>
    primary(a, b) || ascending(a.record.resource.id, b.record.resource.id) || a.optionIndex - b.optionIndex
  return { score, compare }
}

/**
 * One entry per rejected resource, with the reasons of all its options and every code once. Its
 * decision is its most favourable option's, as policy evaluation answers: INSUFFICIENT_DATA (also
 * among its codes) when nothing but missing or stale evidence stands in the way.
 */
const rejection = (record: ResourceRecord, optionVerdicts: ReadonlyArray<PolicyVerdict>): RejectedCandidate => {
  const verdicts = optionVerdicts.map((v) => v.reasons)
  const best = optionVerdicts[mostFavourable(optionVerdicts)]
  const decision = best?.decision === "INSUFFICIENT_DATA" ? "INSUFFICIENT_DATA" : "DENY"
  const single = verdicts.length === 1
  const reasons: Array<PolicyReason> =
    verdicts.length === 0 ? [{ code: "NO_PAYMENT_OPTION", message: "the resource offers no payment option" }] : []
  const seen = new Set<string>()
  verdicts.forEach((optionReasons, index) => {
    for (const reason of optionReasons) {
      const message = single || !OPTION_CODES.has(reason.code) ? reason.message : `option ${index}: ${reason.message}`
      const key = `${reason.code}\n${message}`
      if (!seen.has(key)) {
        seen.add(key)
        reasons.push({ code: reason.code, message })
      }
    }
  })
  return {
    resourceId: record.resource.id,
    providerId: record.provider.id,
    optionIndex: single ? 0 : null,
    decision,
    codes: [
      ...new Set<string>([...(decision === "INSUFFICIENT_DATA" ? [decision] : []), ...reasons.map((r) => r.code)])
    ],
    reasons
  }
}

const summary = (
  capability: string,
  candidates: number,
  ranked: ReadonlyArray<RankedCandidate>,
  rejected: ReadonlyArray<RejectedCandidate>
) => {
  if (candidates === 0) return `no resource in the catalog offers capability "${capability}"`
  const unjudged = rejected.filter((r) => r.decision === "INSUFFICIENT_DATA").length
  const [selected] = ranked
  if (selected === undefined) {
    if (unjudged === candidates) {
      return `no provider of "${capability}" could be judged: none of the ${candidates} candidate(s) has current evidence (INSUFFICIENT_DATA); they may qualify once probed`
    }
    return (
      `no provider of "${capability}" satisfies the policy: all ${candidates} candidate(s) were rejected` +
      (unjudged > 0 ? `, ${unjudged} of them for lack of current evidence (INSUFFICIENT_DATA)` : "")
    )
  }
  return (
    `selected ${selected.resourceId} option ${selected.optionIndex} (score ${Number(selected.score.toFixed(6))}) ` +
    `from ${candidates} candidate(s): ${ranked.length - 1} fallback(s), ${rejected.length} rejected` +
    (unjudged > 0 ? ` (${unjudged} for lack of current evidence: INSUFFICIENT_DATA)` : "")
  )
}

/**
 * Routes a capability under a buyer policy: every payment option of every candidate goes through
 * the same policy evaluation as `/v1/policies/evaluate`; a resource is ranked by its best allowed
 * option, or rejected with the reasons of all its options.
 */
export const decideRoute = (input: RouteInput): RouteDecision => {
  const { request, evidence, context } = input
  const policy = request.constraints ?? {}
  const optimizeFor = request.optimizeFor ?? "balanced"
  const candidates = input.catalog
    .filter((r) => r.resource.capabilities.includes(request.capability))
    .sort((a, b) => ascending(a.resource.id, b.resource.id))

  const survivors: Array<Survivor> = []
  const rejected: Array<RejectedCandidate> = []
  for (const record of candidates) {
    const found = evidence.get(record.resource.id)
    const verdicts = record.paymentOptions.map((option) =>
      evaluatePolicy({ policy, providerId: record.provider.id, option, evidence: found, context })
    )
    const allowed = record.paymentOptions.flatMap((option, optionIndex) =>
      verdicts[optionIndex]?.decision === "ALLOW" && found !== undefined
        ? [{ record, optionIndex, option, evidence: found, worstCaseUsd: worstCaseUsd(option) }]
        : []
    )
    if (allowed.length === 0) rejected.push(rejection(record, verdicts))
    else survivors.push(...allowed)
  }

  const { score, compare } = ranker(optimizeFor, survivors)
  const placed = new Set<string>()
  const ranked: Array<RankedCandidate> = []
  for (const s of [...survivors].sort(compare)) {
    if (placed.has(s.record.resource.id)) continue
    placed.add(s.record.resource.id)
    ranked.push({
      rank: ranked.length + 1,
      resourceId: s.record.resource.id,
      providerId: s.record.provider.id,
      optionIndex: s.optionIndex,
      option: s.option,
      worstCaseUsd: s.worstCaseUsd,
      score: score(s),
      metrics: s.evidence.metrics
    })
  }

  const [selected, ...fallbacks] = ranked
  // Every candidate is judged; the answer carries the best `limit` fallbacks and the first `limit`
  // rejections (by id), so it never grows with the catalog.
  const limit = request.limit ?? PAGE_LIMITS.routes.default
  const omitted = { fallbacks: Math.max(0, fallbacks.length - limit), rejected: Math.max(0, rejected.length - limit) }
  return {
    capability: request.capability,
    optimizeFor,
    policy,
    selected: selected ?? null,
    fallbacks: fallbacks.slice(0, limit),
    rejected: rejected.slice(0, limit),
    message: summary(request.capability, candidates.length, ranked, rejected),
    ...(omitted.fallbacks + omitted.rejected > 0 ? { omitted } : {}),
    metricsSnapshotAt: input.metricsSnapshotAt,
    decidedAt: context.now.toISOString()
  }
}
