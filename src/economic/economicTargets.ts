import type { EconomicProbesConfig } from "../config.js"
import type { ResourceEvidence } from "../domain/evidence.js"
import type { ResourcePaymentOption, ResourceRecord } from "../domain/resources.js"
import { evaluatePolicy, type PolicyContext } from "../policy/evaluate.js"
import type { Deployment } from "../x402/challenge.js"

/** A resource an economic probe pays, through the option it pays. */
export interface EconomicTarget {
  readonly record: ResourceRecord
  readonly option: ResourcePaymentOption
}

export interface Skipped {
  readonly resourceId: string
  readonly reason: string
}

/** The cycle's per-payee and per-provider caps: why a target is over one, or null (and it is counted). */
const capsOf = (config: EconomicProbesConfig) => {
  const perPayee = new Map<string, number>()
  const perProvider = new Map<string, number>()
  return (payTo: string, provider: string): string | null => {
    if ((perPayee.get(payTo) ?? 0) >= config.maxPerPayee)
      return `payee ${payTo} was paid for ${config.maxPerPayee} resources this cycle (maxPerPayee)`
    if ((perProvider.get(provider) ?? 0) >= config.maxPerProvider) {
      return `provider "${provider}" was paid for ${config.maxPerProvider} resources this cycle (maxPerProvider)`
    }
    perPayee.set(payTo, (perPayee.get(payTo) ?? 0) + 1)
    perProvider.set(provider, (perProvider.get(provider) ?? 0) + 1)
    return null
  }
}

/**
 * What one cycle of economic probes pays: the configured resources (or every listed trusted one,
 * docs/trust.md: anyone could register an entry priced at the cap with their own payTo), each
 * through its cheapest `exact` option on this deployment's network and asset that the operator's
 * policy ALLOWs with the per-probe price cap added, once it has `minObservations` probes in the
 * window, and at most `maxPerPayee` per payee and `maxPerProvider` per provider a cycle. Only
 * `exact` is paid: it is the only Stellar scheme a wallet can sign today. Everything left out is
 * named with why.
 */
export const economicTargets = (
  listed: ReadonlyArray<ResourceRecord>,
  evidence: ReadonlyMap<string, ResourceEvidence>,
  config: EconomicProbesConfig,
  deployment: Deployment,
  context: PolicyContext
): { readonly targets: ReadonlyArray<EconomicTarget>; readonly skipped: ReadonlyArray<Skipped> } => {
  const byId = new Map<string, ResourceRecord>(listed.map((r) => [r.resource.id, r]))
  const chosen =
    config.resources ?? listed.filter((r) => config.includeUntrusted || r.listing.trusted).map((r) => r.resource.id)
  const overCap = capsOf(config)
  const cap = Math.min(config.maxPriceUsd, config.policy.maxPricePerRequestUsd ?? Infinity)
  const policy = { ...config.policy, maxPricePerRequestUsd: cap }
  const targets: Array<EconomicTarget> = []
  const skipped: Array<Skipped> = []
  for (const id of chosen) {
    const record = byId.get(id)
    if (record === undefined) {
      skipped.push({ resourceId: id, reason: "not a listed resource" })
      continue
    }
    const payable = record.paymentOptions.filter(
      (o) => o.scheme === "exact" && o.network === deployment.network && o.asset === deployment.assetContract
    )
    if (payable.length === 0) {
      skipped.push({ resourceId: id, reason: "no exact option on this network and asset" })
      continue
    }
    const verdicts = payable.map((option) => ({
      option,
      verdict: evaluatePolicy({ policy, providerId: record.provider.id, option, evidence: evidence.get(id), context })
    }))
    const allowed = verdicts
      .filter((v) => v.verdict.decision === "ALLOW")
      .sort((a, b) => a.option.amountUsd - b.option.amountUsd)
    const [cheapest] = allowed
    if (cheapest === undefined) {
      const reasons = [...new Set(verdicts.flatMap((v) => v.verdict.reasons.map((r) => r.code)))].join(", ")
      skipped.push({ resourceId: id, reason: `the operator's policy does not allow it (${reasons})` })
      continue
    }
    const seen = evidence.get(id)?.metrics.observationCount ?? 0
    if (seen < config.minObservations) {
      skipped.push({
        resourceId: id,
        reason: `${seen} probes in the window, fewer than the ${config.minObservations} minObservations`
      })
      continue
    }
    const capped = overCap(cheapest.option.payTo, record.provider.id)
    if (capped !== null) skipped.push({ resourceId: id, reason: capped })
    else targets.push({ record, option: cheapest.option })
  }
  return { targets, skipped }
}
