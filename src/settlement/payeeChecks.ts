import { Effect } from "effect"
import { AppConfig } from "../config.js"
import { type ProviderEvidence, providerEvidenceOf } from "../domain/evidence.js"
import { policyContext } from "../policy/evaluate.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import type { Payment } from "./readPayment.js"
import { type NamedPolicy, payeeDenial, type paymentOption } from "./rules.js"

/**
 * Step 6: Payee evidence: the payee's listed resources and their evidence, in two parts. The shortlist holds a
 * quarantined resource and one of a denied provider when the whole set has one (the rules about
 * "any" resource), and a few that could pass (the rule about "some"): if they pass, the whole set
 * passes too (docs/decisions.md, Settlement pipeline). `checkPayee` answers whether
 * they do; `checkWholePayee` judges the whole set, for a refusal's exact reason or a payee whose
 * passing resources were not among the few.
 */
export const makePayeeChecks = Effect.gen(function* () {
  const config = yield* AppConfig
  const reader = yield* EvidenceReader

  const payeeJudge =
    (payment: Payment, policies: ReadonlyArray<NamedPolicy>, option: ReturnType<typeof paymentOption>, nowMs: number) =>
    (payees: ReadonlyArray<ProviderEvidence>) =>
      payeeDenial(
        policies,
        option,
        payees,
        policyContext(config, new Date(nowMs)),
        payment.paidUrl,
        config.ingestion.untrustedPayeeStanding
      )

  const checkPayee = Effect.fn("Settlement.checkPayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const deniedProviders = policies.flatMap(({ policy }) => policy.denyProviders ?? [])
    return (
      payeeJudge(
        payment,
        policies,
        option,
        nowMs
      )(yield* reader.payeeShortlist(payment.terms.payTo, deniedProviders, payment.paidUrl)) === undefined
    )
  })

  const checkWholePayee = Effect.fn("Settlement.checkWholePayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const refusal = payeeJudge(
      payment,
      policies,
      option,
      nowMs
    )((yield* reader.forPayee(payment.terms.payTo)).map(providerEvidenceOf))
    if (refusal) return yield* Effect.fail(refusal)
  })

  return { checkPayee, checkWholePayee }
})
