import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { type AllFacilitatorsFailed, IdempotencyKeyReused, InvalidRequest } from "../domain/errors.js"
import type { PrincipalId } from "../domain/ids.js"
import { describeParseError } from "../domain/issues.js"
import { mayReserveAgain } from "../domain/settlements.js"
import { type FacilitatorRequest, SettleRequest, VerifyResponse } from "../domain/x402.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { VerifyAnswersRepo } from "../store/VerifyAnswersRepo.js"
import { FacilitatorPool, type KindRefusal } from "../x402/FacilitatorPool.js"
import { ledgerRefusal } from "./nonceCheck.js"
import { type CheckRefusal, PaymentChecks } from "./PaymentChecks.js"
import { contentHash, type Payment } from "./readPayment.js"

/** How long a verify answer is replayed for its key: a retry comes within minutes, a payment authorisation expires within hours. */
export const VERIFY_ANSWER_TTL_MS = 24 * 60 * 60 * 1000

export interface VerifyInput {
  readonly request: FacilitatorRequest
  /** The `Idempotency-Key` header, else the payment identifier; undefined: no caching. */
  readonly idempotencyKey: string | undefined
  /** The API key's principal; null in open mode, where the payer (else one shared scope) is the principal. */
  readonly principal: PrincipalId | null
}

export interface IdempotentVerifyShape {
  readonly verify: (
    input: VerifyInput
  ) => Effect.Effect<
    typeof VerifyResponse.Type,
    InvalidRequest | KindRefusal | AllFacilitatorsFailed | IdempotencyKeyReused | CheckRefusal
  >
}

/**
 * `/x402/verify` with an idempotency key (docs/decisions.md, payment-identifier): the same key and
 * the same body get the stored answer without a backend call; the same key with another body is
 * 409 IDEMPOTENCY_KEY_REUSED. Keys are scoped per principal, as settlement scopes them.
 */
export class IdempotentVerify extends Context.Tag("sextant/IdempotentVerify")<
  IdempotentVerify,
  IdempotentVerifyShape
>() {
  static readonly Live = Layer.effect(
    IdempotentVerify,
    Effect.suspend(() => make)
  )
}

const decodeAnswer = Schema.decodeUnknown(VerifyResponse)

const make = Effect.gen(function* () {
  const pool = yield* FacilitatorPool
  const answers = yield* VerifyAnswersRepo
  const checks = yield* PaymentChecks
  const journal = yield* SettlementJournal

  /**
   * A payment this service settled (or is settling) with the same requirements spent its nonce
   * itself: settle answers such a repeat from the journal, so verify does not refuse it either.
   */
  const journaledRepeat = (payment: Payment) =>
    Effect.map(
      journal.find({ principal: payment.principal, idempotencyKey: undefined, paymentId: payment.paymentId }),
      (earlier) =>
        Option.isSome(earlier) &&
        earlier.value.entry.requestHash === payment.requestHash &&
        !mayReserveAgain(earlier.value, payment.requestHash)
    )

  /**
   * A verify body read as settle reads its body: the same strict requirements (a Stellar payee, an
   * amount in base units, a signed transaction), so a verify refuses what settle would refuse. A
   * body that is not one names its kind first: a kind no backend supports is 422, as the SPEC
   * says, not a 400 about an EVM payee.
   */
  const asSettleRequest = (request: FacilitatorRequest) =>
    Schema.decodeUnknown(SettleRequest)(request, { errors: "all" }).pipe(
      Effect.catchAll((e) =>
        Effect.zipRight(
          pool.checkKind(request.paymentRequirements.network, request.paymentRequirements.scheme),
          new InvalidRequest({ message: describeParseError(e) })
        )
      )
    )

  /**
   * Every check settle runs before any backend (docs/architecture.md, "The flow of a settle", steps
   * 2 and 4 to 7, and the spent nonce), by the same service: a payment settle would refuse is
   * refused here with the same code, and no backend is asked. No budget is reserved: a verify
   * moves no money.
   */
  const checkLocally = (input: VerifyInput) =>
    Effect.gen(function* () {
      const payment = yield* checks.read(yield* asSettleRequest(input.request), input.principal)
      const nonceRead = yield* checks.nonceCheck(payment)
      yield* checks.judge(payment, input.principal, (inline) => inline)
      const refused = ledgerRefusal(payment, yield* nonceRead, input.request.paymentRequirements.maxTimeoutSeconds)
      if (refused !== null && !(yield* journaledRepeat(payment))) return yield* Effect.fail(refused)
      return payment
    })

  const verify = Effect.fn("IdempotentVerify.verify")(function* (input: VerifyInput) {
    const payment = yield* checkLocally(input)
    const key = input.idempotencyKey
    if (key === undefined) return yield* pool.verify(input.request)
    const requestHash = yield* contentHash(input.request)
    // Keys are scoped per principal: in open mode, the payer its signature proved, as settle scopes them.
    const scope = payment.principal
    const nowMs = yield* Clock.currentTimeMillis
    const sinceMs = nowMs - VERIFY_ANSWER_TTL_MS
    const stored = yield* answers.find(scope, key, sinceMs)
    if (Option.isSome(stored)) {
      if (stored.value.requestHash !== requestHash) {
        return yield* Effect.fail(
          new IdempotencyKeyReused({ message: `idempotency key "${key}" was used for a different verify request` })
        )
      }
      return yield* decodeAnswer(stored.value.answer).pipe(Effect.orDie)
    }
    const answer = yield* pool.verify(input.request)
    yield* answers.save(scope, key, requestHash, answer, nowMs, sinceMs)
    return answer
  })

  return { verify } satisfies IdempotentVerifyShape
})
