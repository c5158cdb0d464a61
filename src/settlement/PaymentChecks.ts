import { Clock, Context, Data, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { AuthorizationExpiresTooLate, NonceAlreadyConsumed, PolicyDenied } from "../domain/errors.js"
import { type ProviderEvidence, providerEvidenceOf } from "../domain/evidence.js"
import type { PrincipalId } from "../domain/ids.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { SettleRequest } from "../domain/x402.js"
import { policyContext } from "../policy/evaluate.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"
import { makeNonceCheck, type NonceRead } from "./nonceCheck.js"
import { type Payment, paymentOf } from "./readPayment.js"
import { type NamedPolicy, paymentDenial, paymentOption, payeeDenial, transferMismatch, worstCaseUnits } from "./rules.js"

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
type JudgeRefusal = Effect.Effect.Error<ReturnType<FacilitatorPool["Type"]["checkKind"]>> | PolicyDenied | TransferRefusal
/** Every refusal of these checks. */
export type CheckRefusal = Effect.Effect.Error<ReturnType<typeof paymentOf>> | JudgeRefusal | NonceAlreadyConsumed | AuthorizationExpiresTooLate

export class PaymentChecks extends Context.Tag("sextant/PaymentChecks")<PaymentChecks, PaymentChecksShape>() {
  static readonly Live = Layer.effect(PaymentChecks, Effect.suspend(() => make))
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const pool = yield* FacilitatorPool
  const reader = yield* EvidenceReader
  const nonceCheck = yield* makeNonceCheck
  const { decimals, assetContract } = config.asset

  /**
   * The policies a payment must pass: the request's servicePolicy and, for an API-key principal,
   * the policy configured with its key (every entry of the principal that has one).
   */
  const buyerPolicies = (servicePolicy: AgentPolicy, principal: PrincipalId | null): ReadonlyArray<NamedPolicy> => [
    { name: "servicePolicy", policy: servicePolicy },
    ...config.apiKeys.flatMap((k) =>
      k.principal === principal && k.policy !== undefined ? [{ name: `the policy of principal "${k.principal}"`, policy: k.policy }] : []
    )
  ]

  /** Step 2: Read the payment. */
  const readPayment = Effect.fn("Settlement.readPayment")(function* (request: SettleRequest, principal: PrincipalId | null) {
    return yield* paymentOf(request, principal, assetContract)
  })

  /** Step 5: Policy: the buyer policies on the worst case of what would actually be paid. */
  const checkPolicies = Effect.fn("Settlement.checkPolicies")(function* (payment: Payment, policies: ReadonlyArray<NamedPolicy>, nowMs: number) {
    const option = paymentOption(payment.terms, worstCaseUnits(payment.terms, payment.transfer), decimals)
    const denial = paymentDenial(policies, option, policyContext(config, new Date(nowMs)))
    if (denial) return yield* Effect.fail(denial)
    return option
  })

  /**
   * Step 6: Payee evidence: the payee's listed resources and their evidence, in two parts. The shortlist holds a
   * quarantined resource and one of a denied provider when the whole set has one (the rules about
   * "any" resource), and a few that could pass (the rule about "some"): if they pass, the whole set
   * passes too (docs/decisions.md, Settlement pipeline). `checkPayee` answers whether
   * they do; `checkWholePayee` judges the whole set, for a refusal's exact reason or a payee whose
   * passing resources were not among the few.
   */
  const payeeJudge = (payment: Payment, policies: ReadonlyArray<NamedPolicy>, option: ReturnType<typeof paymentOption>, nowMs: number) =>
    (payees: ReadonlyArray<ProviderEvidence>) => payeeDenial(policies, option, payees, policyContext(config, new Date(nowMs)), payment.paidUrl, config.ingestion.untrustedPayeeStanding)

  const checkPayee = Effect.fn("Settlement.checkPayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const deniedProviders = policies.flatMap(({ policy }) => policy.denyProviders ?? [])
    return payeeJudge(payment, policies, option, nowMs)(yield* reader.payeeShortlist(payment.terms.payTo, deniedProviders, payment.paidUrl)) === undefined
  })

  const checkWholePayee = Effect.fn("Settlement.checkWholePayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const refusal = payeeJudge(payment, policies, option, nowMs)((yield* reader.forPayee(payment.terms.payTo)).map(providerEvidenceOf))
    if (refusal) return yield* Effect.fail(refusal)
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
          (e): e is X & PayeeUndecided => e instanceof PayeeUndecided,
          () => Effect.zipRight(Effect.zipRight(checkWholePayee(payment, policies, option, nowMs), checkTransfer(payment)), within(Effect.void, nowMs))
        )
      ) as Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal>
    })

  return { read: readPayment, judge, nonceCheck } satisfies PaymentChecksShape
})
