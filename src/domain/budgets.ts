import { FeeBudgetExhausted, PolicyDenied } from "./errors.js"
import type { WindowUsage } from "./settlements.js"
import { baseUnitsToUsd } from "./stellar.js"

/**
 * The settle budgets (the config's `budgets` section) and the asset's decimals: the data the
 * journal judges a reservation or a further attempt against, under its budget lock.
 */
export interface BudgetLimits {
  readonly windowSeconds: number
  readonly feeCeilingStroops: number
  readonly globalFeeStroops: number
  readonly perPrincipalFeeStroops: number
  readonly spendWindowUsd: number
  readonly decimals: number
}

/** The limits of a config: its `budgets` section and its asset's decimals. */
export const budgetLimitsOf = (config: {
  readonly budgets: Omit<BudgetLimits, "decimals">
  readonly asset: { readonly decimals: number }
}): BudgetLimits => ({ ...config.budgets, decimals: config.asset.decimals })

/** What the budgets refuse with: the spend window (403) or a fee budget (429). */
export type BudgetRefusal = PolicyDenied | FeeBudgetExhausted

/** The window budget in base units; a fraction of a base unit cannot be spent, so it rounds down. */
export const spendLimitUnits = (usd: number, decimals: number): bigint =>
  BigInt(Math.floor(usd * 10 ** decimals + 1e-6))

/** Where the rolling budget window ending at `nowMs` starts: reservations after it count. */
export const windowStartMs = (budgets: Pick<BudgetLimits, "windowSeconds">, nowMs: number) =>
  nowMs - budgets.windowSeconds * 1000

/** Seconds until the oldest reservation leaves the window: the earliest moment budget frees up. */
const retryAfter = (oldestMs: number | null, windowMs: number, nowMs: number) =>
  Math.max(1, Math.ceil(((oldestMs ?? nowMs) + windowMs - nowMs) / 1000))

/**
 * Whether one more settlement fits: its worst-case spend under the principal's window budget
 * (403 WINDOW_LIMIT_EXCEEDED), and its sponsored fee, charged at the ceiling, under the global and
 * the per-principal fee budgets (429 FEE_BUDGET_EXHAUSTED with a retry time).
 */
export const judgeBudgets = (
  usage: WindowUsage,
  request: { readonly worstCaseUnits: bigint },
  budgets: BudgetLimits,
  nowMs: number
): BudgetRefusal | undefined => {
  const { decimals } = budgets
  const windowMs = budgets.windowSeconds * 1000
  const limit = spendLimitUnits(budgets.spendWindowUsd, decimals)
  const spend = usage.principalSpendUnits + request.worstCaseUnits
  if (spend > limit) {
    const usd = (units: bigint) => baseUnitsToUsd(units.toString(), decimals)
    return new PolicyDenied({
      code: "WINDOW_LIMIT_EXCEEDED",
      message:
        `worst-case spend over the last ${budgets.windowSeconds} s would be ${usd(spend)} USD ` +
        `(${usd(usage.principalSpendUnits)} USD already committed plus ${usd(request.worstCaseUnits)} USD), ` +
        `above the window budget of ${budgets.spendWindowUsd} USD`
    })
  }
  const fee = BigInt(budgets.feeCeilingStroops)
  const scopes = [
    { name: "global", used: usage.globalFeeStroops, ceiling: budgets.globalFeeStroops, oldest: usage.oldestGlobalMs },
    {
      name: "per-principal",
      used: usage.principalFeeStroops,
      ceiling: budgets.perPrincipalFeeStroops,
      oldest: usage.oldestPrincipalMs
    }
  ]
  for (const scope of scopes) {
    if (scope.used + fee > BigInt(scope.ceiling)) {
      const retryAfterSeconds = retryAfter(scope.oldest, windowMs, nowMs)
      return new FeeBudgetExhausted({
        message:
          `the ${scope.name} sponsored-fee budget is exhausted: ${scope.used} of ${scope.ceiling} stroops are ` +
          `reserved in the last ${budgets.windowSeconds} s and each settlement reserves ${fee}; retry in ${retryAfterSeconds} s`,
        retryAfterSeconds
      })
    }
  }
  return undefined
}
