import type { EconomicProbesConfig } from "../config.js"
import type { ResourceEvidence } from "../domain/evidence.js"
import type { ResourcePaymentOption, ResourceRecord } from "../domain/resources.js"
import { evaluatePolicy, type PolicyContext } from "../policy/evaluate.js"
import type { Deployment } from "./challenge.js"

/** A resource an economic probe pays, through the option it pays. */
export interface EconomicTarget {
  readonly record: ResourceRecord
  readonly option: ResourcePaymentOption
}

export interface Skipped {
  readonly resourceId: string
  readonly reason: string
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
  const byId = new Map(listed.map((r) => [r.resource.id, r]))
  const chosen = config.resources ?? listed.filter((r) => config.includeUntrusted || r.listing.trusted).map((r) => r.resource.id)
  const perPayee = new Map<string, number>()
  const perProvider = new Map<string, number>()
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
    const allowed = verdicts.filter((v) => v.verdict.decision === "ALLOW").sort((a, b) => a.option.amountUsd - b.option.amountUsd)
    const [cheapest] = allowed
    if (cheapest === undefined) {
      const reasons = [...new Set(verdicts.flatMap((v) => v.verdict.reasons.map((r) => r.code)))].join(", ")
      skipped.push({ resourceId: id, reason: `the operator's policy does not allow it (${reasons})` })
      continue
    }
    const seen = evidence.get(id)?.metrics.observationCount ?? 0
    if (seen < config.minObservations) {
      skipped.push({ resourceId: id, reason: `${seen} probes in the window, fewer than the ${config.minObservations} minObservations` })
      continue
    }
    const payTo = cheapest.option.payTo
    const provider = record.provider.id
    if ((perPayee.get(payTo) ?? 0) >= config.maxPerPayee) {
      skipped.push({ resourceId: id, reason: `payee ${payTo} was paid for ${config.maxPerPayee} resources this cycle (maxPerPayee)` })
      continue
    }
    if ((perProvider.get(provider) ?? 0) >= config.maxPerProvider) {
      skipped.push({ resourceId: id, reason: `provider "${provider}" was paid for ${config.maxPerProvider} resources this cycle (maxPerProvider)` })
      continue
    }
    perPayee.set(payTo, (perPayee.get(payTo) ?? 0) + 1)
    perProvider.set(provider, (perProvider.get(provider) ?? 0) + 1)
    targets.push({ record, option: cheapest.option })
  }
  return { targets, skipped }
}
