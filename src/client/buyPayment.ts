import { Effect, Redacted } from "effect"
import type { BuyAttempt } from "../domain/buy.js"
import { type PaidAnswer, payFor } from "../payments/payFor.js"
import { payForTool } from "../payments/payForTool.js"
import type { BuyerSettings } from "./Buyer.js"
import { attemptOf, type Plan, type Resource } from "./buyPlan.js"
import { challengeRefusal } from "./candidate.js"
import { judgeFailure, judgePaid } from "./outcome.js"
import type { SpendLedgerUnavailable } from "./SpendLedger.js"
import type { SpendGuard } from "./spendGuard.js"

/** How one candidate ended and whether the purchase goes on. */
export type Tried =
  | { readonly _tag: "Next"; readonly attempt: BuyAttempt }
  | { readonly _tag: "Stop"; readonly attempt: BuyAttempt }
  | Delivered

export interface Delivered {
  readonly _tag: "Delivered"
  readonly attempt: BuyAttempt
  readonly paid: PaidAnswer
  readonly resource: Resource
  readonly transactionHash: string | null
}

/**
 * Steps 2.3 to 2.6: reserve the ceiling, pay once through `payFor` (the 402 re-checked against the
 * routed option), and judge the answer. Only a ledger that cannot be written fails: nothing is
 * signed then.
 */
export const payPlan = (
  settings: BuyerSettings,
  guard: SpendGuard,
  plan: Plan
): Effect.Effect<Tried, SpendLedgerUnavailable> =>
  Effect.gen(function* () {
    const { candidate, rank, ceiling } = plan
    const attempt = (outcome: BuyAttempt["outcome"], reason: string, more: Partial<BuyAttempt> = {}) =>
      attemptOf(candidate, rank, outcome, reason, more)
    const reservation = yield* guard.reserve(ceiling, candidate.resourceId).pipe(
      Effect.map((reserved) => ({ _tag: "Right" as const, right: reserved })),
      Effect.catchTag("OverSpendLimit", (over) => Effect.succeed({ _tag: "Left" as const, left: over }))
    )
    if (reservation._tag === "Left") {
      const { spent, amount, limit } = reservation.left
      return {
        _tag: "Next",
        attempt: attempt(
          "over_budget",
          `${amount} base units would exceed the limit of ${limit} (${spent} already counted); nothing was signed`
        )
      }
    }
    const terms = {
      url: plan.placement.url,
      signer: Redacted.value(settings.key.signer),
      rpcUrl: settings.rpcUrl,
      inclusionFeeStroops: settings.inclusionFeeStroops,
      deployment: settings.deployment,
      maxPrice: ceiling,
      refuse: challengeRefusal(candidate),
      outbound: settings.outbound
    }
    const body = plan.placement.body === undefined ? {} : { body: plan.placement.body }
    const result = yield* (
      plan.tool === undefined
        ? payFor({ ...terms, method: plan.resource.method, ...body })
        : payForTool({ ...terms, ...plan.tool })
    ).pipe(Effect.either)

    if (result._tag === "Left") {
      const { outcome, reason } = judgeFailure(result.left)
      if (outcome !== "unknown") {
        yield* guard.release(reservation.right, ceiling)
        return { _tag: "Next", attempt: attempt(outcome, reason) }
      }
      // The signature left: it counts at the ceiling, the most it can move.
      const identifier = result.left._tag === "PaymentOutcomeUnknown" ? result.left.paymentIdentifier : undefined
      yield* guard.commit(reservation.right, ceiling, ceiling, identifier)
      return {
        _tag: "Stop",
        attempt: attempt("unknown", reason, {
          amount: ceiling.toString(),
          ...(identifier === undefined ? {} : { paymentIdentifier: identifier })
        })
      }
    }
    const paid = result.right
    const identifier = paid.paymentIdentifier ?? undefined
    yield* guard.commit(reservation.right, ceiling, BigInt(paid.amount), identifier)
    const verdict = judgePaid(paid)
    const signed = {
      amount: paid.amount,
      httpStatus: paid.status,
      transactionHash: paid.paymentResponse?.transaction ?? null,
      ...(identifier === undefined ? {} : { paymentIdentifier: identifier }),
      ...(paid.sends === undefined ? {} : { sends: paid.sends })
    }
    switch (verdict._tag) {
      case "Delivered": {
        const done = attempt("paid", `answered ${paid.status}`, { ...signed, transactionHash: verdict.transactionHash })
        return {
          _tag: "Delivered",
          attempt: done,
          paid,
          resource: plan.resource,
          transactionHash: verdict.transactionHash
        }
      }
      case "Unpaid":
        return { _tag: "Next", attempt: attempt("failed", verdict.reason, signed) }
      case "PaidFailed":
        return { _tag: "Stop", attempt: attempt("paid_failed", verdict.reason, signed) }
    }
  })
