import { Clock, Context, Data, Effect, Layer, Predicate } from "effect"
import { AppConfig } from "../config.js"
import type { AuthorizationExpiresTooLate, NonceAlreadyConsumed, PolicyDenied } from "../domain/errors.js"
import type { PrincipalId } from "../domain/ids.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { SettleRequest } from "../domain/x402.js"
import { policyContext } from "../policy/evaluate.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"
import { makeNonceCheck, type NonceRead } from "./nonceCheck.js"
import { makePayeeChecks } from "./payeeChecks.js"
import { type Payment, paymentOf } from "./readPayment.js"
import { type NamedPolicy, paymentDenial, paymentOption, transferMismatch, worstCaseUnits } from "./rules.js"

/** The payee's shortlist did not show a pass: the whole set decides, outside the reservation's transaction. */
export class PayeeUndecided extends Data.TaggedError("PayeeUndecided") {}

/**
 * The checks of a payment that need no facilitator: verify and settle both run them, through this
 * one service, so a verify never calls valid what settle would refuse (docs/architecture.md, "The
 * flow of a settle", steps 2 and 4 to 7, and the nonce of step 9).
 */
export interface PaymentChecksShape {
  /** Step 2: the terms this service can value, the signed transfer (credential form, payer signature), the principal. */
  readonly read: (request: SettleRequest, principal: PrincipalId | null) => ReturnType<typeof paymentOf>
  /**
   * Steps 4 to 7: kind, policy, payee evidence and transfer terms. `within` runs the part judged on
   * the payee's shortlist (settle: inside the reservation's transaction; verify: as it is); when the
   * shortlist shows no pass, the whole set is judged outside it and `within` runs with nothing left to check.
   */
  readonly judge: <A, X>(
    payment: Payment,
    principal: PrincipalId | null,
    within: (checks: Effect.Effect<void, ShortlistRefusal>, nowMs: number) => Effect.Effect<A, X>
  ) => Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal>
  /**
   * Starts the read of whether the payer's nonce is already spent on the ledger, and of the latest
   * ledger; the effect it returns awaits the answer (unread when there is nothing to ask or the
   * ledger cannot say in time). `ledgerRefusal` judges it.
   */
  readonly nonceCheck: (payment: Payment) => Effect.Effect<Effect.Effect<NonceRead>>
}

type TransferRefusal = NonNullable<ReturnType<typeof transferMismatch>>
/** What the part judged within may fail with; `PayeeUndecided` is not a refusal: the whole set is judged then. */
type ShortlistRefusal = PolicyDenied | TransferRefusal | PayeeUndecided
type JudgeRefusal =
  | Effect.Effect.Error<ReturnType<FacilitatorPool["Type"]["checkKind"]>>
  | PolicyDenied
  | TransferRefusal
/** Every refusal of these checks. */
export type CheckRefusal =
  | Effect.Effect.Error<ReturnType<typeof paymentOf>>
  | JudgeRefusal
  | NonceAlreadyConsumed
  | AuthorizationExpiresTooLate

export class PaymentChecks extends Context.Tag("sextant/PaymentChecks")<PaymentChecks, PaymentChecksShape>() {
  static readonly Live = Layer.effect(
    PaymentChecks,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const pool = yield* FacilitatorPool
  const { checkPayee, checkWholePayee } = yield* makePayeeChecks
  const nonceCheck = yield* makeNonceCheck
  const { decimals, assetContract } = config.asset

  /**
   * The policies a payment must pass: the request's servicePolicy and, for an API-key principal,
   * the policy configured with its key (every entry of the principal that has one).
   */
  const buyerPolicies = (servicePolicy: AgentPolicy, principal: PrincipalId | null): ReadonlyArray<NamedPolicy> => [
    { name: "servicePolicy", policy: servicePolicy },
    ...config.apiKeys.flatMap((k) =>
      k.principal === principal && k.policy !== undefined
        ? [{ name: `the policy of principal "${k.principal}"`, policy: k.policy }]
        : []
    )
  ]

  /** Step 2: Read the payment. */
  const readPayment = Effect.fn("Settlement.readPayment")(function* (
    request: SettleRequest,
    principal: PrincipalId | null
  ) {
    return yield* paymentOf(request, principal, assetContract)
  })

  /** Step 5: Policy: the buyer policies on the worst case of what would actually be paid. */
  const checkPolicies = Effect.fn("Settlement.checkPolicies")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    nowMs: number
  ) {
    const option = paymentOption(payment.terms, worstCaseUnits(payment.terms, payment.transfer), decimals)
    const denial = paymentDenial(policies, option, policyContext(config, new Date(nowMs)))
    if (denial) return yield* Effect.fail(denial)
    return option
  })

  /** Step 7: Transfer: the signed transfer pays what the requirements say. */
  const checkTransfer = Effect.fn("Settlement.checkTransfer")(function* (payment: Payment) {
    const mismatch = transferMismatch(payment.terms, payment.transfer, decimals)
    if (mismatch) return yield* Effect.fail(mismatch)
  })

  const judge = <A, X>(
    payment: Payment,
    principal: PrincipalId | null,
    within: (checks: Effect.Effect<void, ShortlistRefusal>, nowMs: number) => Effect.Effect<A, X>
  ): Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal> =>
    Effect.gen(function* () {
      // Step 4: Kind.
      yield* pool.checkKind(payment.terms.network, payment.terms.scheme)
      const nowMs = yield* Clock.currentTimeMillis
      const policies = buyerPolicies(payment.terms.policy, principal)
      const option = yield* checkPolicies(payment, policies, nowMs)
      const shortlisted: Effect.Effect<void, ShortlistRefusal> = Effect.gen(function* () {
        if (!(yield* checkPayee(payment, policies, option, nowMs))) return yield* new PayeeUndecided()
        yield* checkTransfer(payment)
      })
      return yield* within(shortlisted, nowMs).pipe(
        Effect.catchIf(
          (e): e is X & PayeeUndecided => Predicate.isTagged(e, "PayeeUndecided"),
          () =>
            Effect.zipRight(
              Effect.zipRight(checkWholePayee(payment, policies, option, nowMs), checkTransfer(payment)),
              within(Effect.void, nowMs)
            )
        )
      ) as Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal>
    })

  return { read: readPayment, judge, nonceCheck } satisfies PaymentChecksShape
})
