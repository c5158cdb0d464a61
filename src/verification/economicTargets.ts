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
 * What one cycle of economic probes pays: the configured resources (or every listed one), each
 * through its cheapest `exact` option on this deployment's network and asset that the operator's
 * policy ALLOWs with the per-probe price cap added. Only `exact` is paid: it is the only Stellar
 * scheme a wallet can sign today. Everything left out is named with why.
 */
export const economicTargets = (
  listed: ReadonlyArray<ResourceRecord>,
  evidence: ReadonlyMap<string, ResourceEvidence>,
  config: EconomicProbesConfig,
  deployment: Deployment,
  context: PolicyContext
): { readonly targets: ReadonlyArray<EconomicTarget>; readonly skipped: ReadonlyArray<Skipped> } => {
  const byId = new Map(listed.map((r) => [r.resource.id, r]))
  const chosen = config.resources ?? listed.map((r) => r.resource.id)
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
    targets.push({ record, option: cheapest.option })
  }
  return { targets, skipped }
}
