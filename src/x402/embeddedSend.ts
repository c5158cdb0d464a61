import { Deferred, Effect, Option } from "effect"
import type { SettleResponse } from "../domain/x402.js"
import type { PaymentRequest } from "../facilitator/payment.js"
import { Reason, type Refusal } from "../facilitator/reasons.js"
import { follow, submit } from "../facilitator/submit.js"
import type { CheckedPayment } from "../facilitator/verifyRules.js"
import type { EmbeddedSettleParts } from "./embeddedSettle.js"
import { BackendFailure } from "./FacilitatorClient.js"

export type Settle = typeof SettleResponse.Type

/** A settle of one payment this backend is sending or sent: its hash once built, and how it ended. */
export interface Sent {
  hash: string
  readonly outcome: Deferred.Deferred<Settle, BackendFailure>
}

/**
 * The send step of the embedded settle: a leased sequence source, the transaction built, sent and
 * followed until the deadline, then on in the backend's scope while it is still out.
 */
export const makeSendPayment = ({
  entry,
  context,
  sources,
  unreachable,
  count,
  readBalance,
  reportState,
  scope
}: EmbeddedSettleParts) => {
  /** Follows a sent transaction to its end, then frees its source and records the balance. */
  const conclude = (record: Sent, payer: string, sentAt: number, until: number, release: Effect.Effect<void>) =>
    Effect.gen(function* () {
      const status = yield* follow(context, record.hash, until)
      const seconds = (Date.now() - sentAt) / 1000
      const answer: Settle =
        status === "SUCCESS"
          ? { success: true, transaction: record.hash, network: entry.network, payer }
          : status === "FAILED"
            ? {
                success: false,
                errorReason: Reason.transactionFailed,
                errorMessage: "the transaction failed on the ledger",
                transaction: record.hash,
                network: entry.network,
                payer
              }
            : pendingAnswer(entry.network, record.hash, payer)
      if (status !== "UNKNOWN") {
        yield* Deferred.succeed(record.outcome, answer)
        yield* release
        yield* count(status === "SUCCESS" ? "settled" : "failed", seconds)
        yield* Effect.forkIn(readBalance, scope)
      }
      return answer
    })

  /** Sends the claimed payment from a leased source and follows it until the deadline. */
  return (request: PaymentRequest, payment: CheckedPayment, record: Sent, deadline: number) =>
    Effect.gen(function* () {
      const leased = yield* sources.lease(deadline - Date.now())
      if (Option.isNone(leased)) {
        return yield* new BackendFailure({
          backendId: entry.id,
          kind: "Unreachable",
          status: null,
          detail: "every sequence source stayed leased until the settle deadline; nothing was sent"
        })
      }
      const source = leased.value
      yield* reportState
      const release = Effect.zipRight(sources.release(source), reportState)
      // Until its transaction left the queue (applied, failed or past its time bound) the source stays leased.
      const bound = Date.now() + (request.maxTimeoutSeconds + 30) * 1000
      const followOn = (sentAt: number) =>
        conclude(
          record,
          payment.payer,
          sentAt,
          bound,
          Effect.zipRight(
            Effect.sync(() => (source.sequence = null)),
            release
          )
        ).pipe(Effect.forkIn(scope))
      const submission = yield* submit(
        context,
        payment,
        request.terms,
        source,
        request.maxTimeoutSeconds,
        deadline,
        (hash) => Effect.sync(() => (record.hash = hash)),
        () => Effect.sync(() => (record.hash = ""))
      ).pipe(
        Effect.catchAll((e) =>
          record.hash === ""
            ? Effect.zipRight(release, Effect.fail(unreachable(e)))
            : Effect.zipRight(
                followOn(Date.now()),
                Effect.fail(
                  new BackendFailure({
                    backendId: entry.id,
                    kind: "Transport",
                    status: null,
                    detail: `sending transaction ${record.hash} failed: ${e.message}`
                  })
                )
              )
        )
      )
      if (submission._tag === "Refused")
        return yield* Effect.as(
          Effect.zipRight(release, count("refused")),
          refusedSettle(entry.network, submission.refusal, payment.payer)
        )
      if (submission._tag === "NotSent") {
        yield* release
        return {
          success: false,
          errorReason: Reason.submissionFailed,
          errorMessage: submission.detail,
          transaction: "",
          network: entry.network,
          payer: payment.payer
        } satisfies Settle
      }
      const answer = yield* conclude(record, payment.payer, submission.sentAt, deadline, release)
      if (answer.success || answer.errorReason !== Reason.pending) return answer
      yield* count("pending")
      yield* followOn(submission.sentAt)
      return answer
    })
}

export const refusedSettle = (network: string, refusal: Refusal, payer: string | undefined): Settle => ({
  success: false,
  errorReason: refusal.reason,
  errorMessage: refusal.message,
  transaction: "",
  network,
  ...(payer === undefined ? {} : { payer })
})

export const pendingAnswer = (network: string, hash: string, payer: string): Settle => ({
  success: false,
  errorReason: Reason.pending,
  errorMessage: `transaction ${hash} was sent and had not reached the ledger by the settle deadline`,
  transaction: hash,
  network,
  payer
})
