import { Clock, Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest, type NotFound, notFound } from "../domain/errors.js"
import type { PolicyEvaluateRequest, PolicyEvaluation } from "../domain/policy.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { evaluatePolicy, mostFavourable, policyContext } from "./evaluate.js"

export interface PolicyEngineShape {
  /**
   * Fails with NotFound for an unknown resource and InvalidRequest for an option index out of range.
   * A resource with no payment option is DENY with NO_PAYMENT_OPTION and a null option index.
   * Without `optionIndex`, answers for the lowest-indexed option with the best decision
   * (ALLOW, then INSUFFICIENT_DATA, then DENY).
   */
  readonly evaluate: (request: PolicyEvaluateRequest) => Effect.Effect<PolicyEvaluation, NotFound | InvalidRequest>
}

/**
 * `/v1/policies/evaluate`: one resource (and one of its payment options) judged against a buyer
 * policy, with the catalog record and the maintained evidence loaded for it.
 */
export class PolicyEngine extends Context.Tag("sextant/PolicyEngine")<PolicyEngine, PolicyEngineShape>() {
  static readonly Live = Layer.effect(
    PolicyEngine,
    Effect.suspend(() => make)
  )
}

const badOption = (message: string) => new InvalidRequest({ message })

const make = Effect.gen(function* () {
  const repo = yield* ResourceReadsRepo
  const reader = yield* EvidenceReader
  const config = yield* AppConfig

  const evaluate = (request: PolicyEvaluateRequest): Effect.Effect<PolicyEvaluation, NotFound | InvalidRequest> =>
    Effect.gen(function* () {
      const { policy, resourceId, optionIndex } = request
      const record = yield* repo
        .get(resourceId)
        .pipe(
          Effect.flatMap(
            Option.match({ onNone: () => Effect.fail(notFound("resource", resourceId)), onSome: Effect.succeed })
          )
        )
      const options = record.paymentOptions
      const now = new Date(yield* Clock.currentTimeMillis)
      // Nothing to pay is a decision about the resource, not a bad request: DENY, as routing says.
      if (options.length === 0 && optionIndex === undefined) {
        return {
          decision: "DENY" as const,
          reasons: [
            { code: "NO_PAYMENT_OPTION" as const, message: `resource "${resourceId}" offers no payment option` }
          ],
          resourceId,
          optionIndex: null,
          evaluatedAt: now.toISOString()
        }
      }
      if (optionIndex !== undefined && optionIndex >= options.length) {
        return yield* Effect.fail(
          badOption(
            `optionIndex ${optionIndex} is out of range: resource "${resourceId}" has ${options.length} payment option(s), indexes 0 to ${options.length - 1}`
          )
        )
      }
      const evidence = yield* reader.forResource(resourceId)
      const context = policyContext(config, now)
      const judge = (index: number) =>
        evaluatePolicy({ policy, providerId: record.provider.id, option: options[index]!, evidence, context })
      // Without an option index the answer is the most favourable option's: can this resource be paid at all?
      const chosen = optionIndex ?? mostFavourable(options.map((_, index) => judge(index)))
      const verdict = judge(chosen)
      return {
        decision: verdict.decision,
        reasons: verdict.reasons,
        resourceId,
        optionIndex: chosen,
        evaluatedAt: now.toISOString()
      }
    }).pipe(Effect.withSpan("PolicyEngine.evaluate"))

  return PolicyEngine.of({ evaluate })
})
