import type { AgentPolicy } from "../domain/policy.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import type { RankedCandidate } from "../domain/routes.js"
import { usdFloorUnits } from "../domain/stellar.js"
import type { Deployment } from "../x402/challenge.js"

/** The routed worst case of an option in base units: the most any challenge for it may ask. */
export const routedCeiling = (option: ResourcePaymentOption): bigint =>
  BigInt(option.scheme === "upto" ? (option.maxAmount ?? option.amount) : option.amount)

/**
 * The most the buyer signs for a candidate: the routed worst case, capped by the policy's price
 * per request (rounded down, so the cap is never read as larger than it is).
 */
export const priceCeiling = (candidate: RankedCandidate, policy: AgentPolicy, decimals: number): bigint => {
  const routed = routedCeiling(candidate.option)
  const cap = policy.maxPricePerRequestUsd
  if (cap === undefined) return routed
  const capped = usdFloorUnits(cap, decimals)
  return capped < routed ? capped : routed
}

/**
 * Why the buyer will not try a routed candidate at all, or null. The service applied the whole
 * policy already; these are the parts the buyer can check without evidence, so a compromised or
 * misconfigured service cannot route it past them: this deployment's network and asset, the one
 * scheme a Stellar wallet signs (`exact`), and the policy's networks, assets, schemes, denied
 * providers and price per request.
 */
export const candidateRefusal = (
  candidate: RankedCandidate,
  policy: AgentPolicy,
  deployment: Deployment
): string | null => {
  const { option } = candidate
  if (option.network !== deployment.network)
    return `the routed option is on ${option.network}, not ${deployment.network}`
  if (option.asset !== deployment.assetContract)
    return `the routed option pays in ${option.asset}, not ${deployment.assetContract}`
  if (option.scheme !== "exact") return `the routed option's scheme is ${option.scheme}; only exact is signed`
  if (policy.networks !== undefined && !policy.networks.includes(option.network))
    return `network ${option.network} is not in the policy`
  if (policy.assets !== undefined && !policy.assets.includes(option.asset))
    return `asset ${option.asset} is not in the policy`
  if (policy.schemes !== undefined && !policy.schemes.includes(option.scheme))
    return `scheme ${option.scheme} is not in the policy`
  if (policy.denyProviders?.includes(candidate.providerId))
    return `provider ${candidate.providerId} is denied by the policy`
  const cap = policy.maxPricePerRequestUsd
  if (cap !== undefined && candidate.worstCaseUsd > cap)
    return `the routed worst case ${candidate.worstCaseUsd} USD is over the policy's ${cap} USD`
  return null
}

/** The terms of a challenge option the buyer compares with the route. */
export interface OfferedTerms {
  readonly scheme: string
  readonly network: string
  readonly asset: string
  readonly payTo: string
}

/**
 * Why one option of a resource's 402 is refused, or null: it must name exactly the routed option's
 * scheme, network, asset and payee. The price is checked apart (against `priceCeiling`), so a
 * challenge asking less than routed is paid at its own price.
 */
export const challengeRefusal =
  (candidate: RankedCandidate) =>
  (offered: OfferedTerms): string | null => {
    const routed = candidate.option
    if (offered.payTo !== routed.payTo) return `payee ${offered.payTo} is not the routed payee ${routed.payTo}`
    if (offered.asset !== routed.asset) return `asset ${offered.asset} is not the routed ${routed.asset}`
    if (offered.network !== routed.network) return `network ${offered.network} is not the routed ${routed.network}`
    if (offered.scheme !== routed.scheme) return `scheme ${offered.scheme} is not the routed ${routed.scheme}`
    return null
  }
