import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { PrincipalId } from "../domain/ids.js"
import { decodeRows, repository } from "./repository.js"
import { StoreTransactions } from "./StoreTransactions.js"

/** What VerifyAnswersRepo offers. */
export interface VerifyAnswersRepoShape {
  /** The answer stored for this principal's key, if it is younger than `sinceMs`. */
  readonly find: (
    principal: PrincipalId,
    key: string,
    sinceMs: number
  ) => Effect.Effect<Option.Option<StoredVerifyAnswer>>
  /**
   * Stores an answer, replacing one that expired before `sinceMs`, and drops every other expired
   * row. The first answer stored for a live key wins: a concurrent twin keeps it.
   */
  readonly save: (
    principal: PrincipalId,
    key: string,
    requestHash: string,
    answer: unknown,
    nowMs: number,
    sinceMs: number
  ) => Effect.Effect<void>
}

export class VerifyAnswersRepo extends Context.Tag("sextant/VerifyAnswersRepo")<
  VerifyAnswersRepo,
  VerifyAnswersRepoShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(VerifyAnswersRepo, make))
}

const AnswerRow = Schema.Struct({ request_hash: Schema.String, answer_json: Schema.String })
const decodeAnswers = decodeRows(AnswerRow)

/** A cached verify answer and the hash of the request it answered. */
export interface StoredVerifyAnswer {
  readonly requestHash: string
  readonly answer: unknown
}

/**
 * `/x402/verify` answers by idempotency key (docs/decisions.md, payment-identifier). The key is
 * stored scoped by its principal, so two principals' equal keys are two entries.
 */
const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { transaction } = yield* StoreTransactions
  const scoped = (principal: PrincipalId, key: string) => JSON.stringify([principal, key])
  return repository("VerifyAnswersRepo", {
    find: (principal: PrincipalId, key: string, sinceMs: number) =>
      sql`SELECT request_hash, answer_json FROM verify_answers
        WHERE scoped_key = ${scoped(principal, key)} AND created_at_ms >= ${sinceMs}`.pipe(
        Effect.flatMap(decodeAnswers),
        Effect.map((rows) =>
          Option.map(
            Option.fromNullable(rows[0]),
            (r): StoredVerifyAnswer => ({ requestHash: r.request_hash, answer: JSON.parse(r.answer_json) })
          )
        )
      ),
    save: (principal: PrincipalId, key: string, requestHash: string, answer: unknown, nowMs: number, sinceMs: number) =>
      Effect.gen(function* () {
        yield* sql`DELETE FROM verify_answers WHERE created_at_ms < ${sinceMs}`
        yield* sql`INSERT INTO verify_answers (scoped_key, request_hash, answer_json, created_at_ms)
          VALUES (${scoped(principal, key)}, ${requestHash}, ${JSON.stringify(answer)}, ${nowMs})
          ON CONFLICT (scoped_key) DO NOTHING`
      }).pipe(transaction)
  })
})
