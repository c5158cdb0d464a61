import { Clock, Context, Effect, Either, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import { StellarNetwork } from "../domain/stellar.js"
import { type AllFacilitatorsFailed, DelegatedCredentialsRefused, IdempotencyKeyReused, InvalidRequest, SourceAccountCredentialsRefused } from "../domain/errors.js"
import { type FacilitatorRequest, VerifyResponse } from "../domain/x402.js"
import { canonicalize } from "../encoding/canonicalJson.js"
import { decodePayment } from "../settlement/transfer.js"
import { VerifyAnswersRepo } from "../store/VerifyAnswersRepo.js"
import { FacilitatorPool, type KindRefusal } from "./FacilitatorPool.js"
import { PrincipalId } from "../domain/ids.js"

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
    InvalidRequest | KindRefusal | AllFacilitatorsFailed | IdempotencyKeyReused | DelegatedCredentialsRefused | SourceAccountCredentialsRefused
  >
}

/**
 * `/x402/verify` with an idempotency key (docs/decisions.md, payment-identifier): the same key and
 * the same body get the stored answer without a backend call; the same key with another body is
 * 409 IDEMPOTENCY_KEY_REUSED. Keys are scoped per principal, as settlement scopes them.
 */
export class IdempotentVerify extends Context.Tag("sextant/IdempotentVerify")<IdempotentVerify, IdempotentVerifyShape>() {
  static readonly Live = Layer.effect(IdempotentVerify, Effect.suspend(() => make))
}

const isNetwork = Schema.is(StellarNetwork)

/** The Stellar payment a verify carries, decoded; null when it names no Stellar network or holds no transaction. */
const decodedOf = (request: FacilitatorRequest) => {
  const payload = request.paymentPayload.payload as { readonly transaction?: unknown }
  const network = request.paymentRequirements.network
  return typeof payload.transaction !== "string" || !isNetwork(network) ? null : decodePayment(payload.transaction, network)
}

/**
 * Credential forms settle refuses are refused at verify too, before a backend is asked: a verify
 * that passed would promise a settle that cannot happen. Anything else is the backend's to judge.
 */
const refusedCredentials = (decoded: ReturnType<typeof decodedOf>) =>
  decoded !== null && Either.isLeft(decoded) &&
  (decoded.left instanceof DelegatedCredentialsRefused || decoded.left instanceof SourceAccountCredentialsRefused)
    ? Effect.fail(decoded.left)
    : Effect.void

/** Open mode has no principals: the payer stands in, as in settlement, when its signature proved it. */
const scopeOf = (input: VerifyInput, decoded: ReturnType<typeof decodedOf>) =>
  input.principal ?? PrincipalId.make(decoded !== null && Either.isRight(decoded) && decoded.right.payerVerified ? decoded.right.transfer.from : "open")

const decodeAnswer = Schema.decodeUnknown(VerifyResponse)

const make = Effect.gen(function* () {
  const pool = yield* FacilitatorPool
  const answers = yield* VerifyAnswersRepo

  const verify = Effect.fn("IdempotentVerify.verify")(function* (input: VerifyInput) {
    const decoded = decodedOf(input.request)
    yield* refusedCredentials(decoded)
    const key = input.idempotencyKey
    if (key === undefined) return yield* pool.verify(input.request)
    const requestHash = yield* Either.mapBoth(canonicalize(input.request), {
      onLeft: (e) => new InvalidRequest({ message: `the request cannot be hashed: ${e.message}` }),
      onRight: (text) => createHash("sha256").update(text).digest("hex")
    })
    const scope = scopeOf(input, decoded)
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
