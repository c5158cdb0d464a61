import { type FeeBumpTransaction, type Keypair, rpc, type Transaction, TransactionBuilder } from "@stellar/stellar-sdk"
import { Effect, Either } from "effect"
import type { SequenceSource } from "./channels.js"
import { type FacilitatorRpc, GetStatus, isBadSequence, type RpcUnavailable } from "./ledgerClient.js"
import { rebuild } from "./payment.js"
import { Reason, type Refusal, refuse } from "./reasons.js"
import { judgeSimulation } from "./simulation.js"
import type { CheckedPayment, ExactTerms } from "./verifyRules.js"

/** What one settle needs to build and send its transaction. */
export interface SubmitContext {
  readonly rpc: FacilitatorRpc
  readonly passphrase: string
  /** Pays the fee: the fee-bump's fee source, or the source itself when there are no channels. */
  readonly feeAccount: Keypair
  readonly feeBump: boolean
  readonly inclusionFee: number
  /** `budgets.feeCeilingStroops`: a transaction whose total fee is above it is never sent. */
  readonly feeCeilingStroops: bigint
  readonly pollIntervalMs: number
}

/** How a submission ended: sent (the hash to follow), refused before sending, or sent nowhere. */
export type Submission =
  | { readonly _tag: "Sent"; readonly hash: string; readonly sentAt: number }
  | { readonly _tag: "Refused"; readonly refusal: Refusal }
  | { readonly _tag: "NotSent"; readonly detail: string }

/** Sequence errors tolerated per settle: each re-reads the source's sequence and builds again. */
const BAD_SEQUENCE_RETRIES = 3

const buildSigned = (
  context: SubmitContext,
  payment: CheckedPayment,
  terms: ExactTerms,
  source: SequenceSource,
  sequence: bigint,
  timeoutSeconds: number
) =>
  Effect.gen(function* () {
    const draft = rebuild(payment, source.address, sequence, context.inclusionFee, timeoutSeconds, context.passphrase)
    const simulated = judgeSimulation(yield* context.rpc.simulate(draft), payment.payer, terms, payment.auth)
    if (Either.isLeft(simulated)) return Either.left(simulated.left)
    const inner = rpc.assembleTransaction(draft, simulated.right.success).build()
    inner.sign(source.keypair)
    const envelope: Transaction | FeeBumpTransaction = context.feeBump
      ? TransactionBuilder.buildFeeBumpTransaction(
          context.feeAccount,
          String(context.inclusionFee),
          inner,
          context.passphrase
        )
      : inner
    if (context.feeBump) envelope.sign(context.feeAccount)
    if (BigInt(envelope.fee) > context.feeCeilingStroops) {
      return Either.left(
        refuse(
          Reason.feeExceedsMaximum,
          `the settle would cost ${envelope.fee} stroops, above budgets.feeCeilingStroops (${context.feeCeilingStroops})`
        )
      )
    }
    return Either.right(envelope)
  })

/**
 * Builds the settle's transaction from the leased `source` (re-simulated with it as source,
 * assembled with the simulated resource fee, signed, fee-bumped by the fee account) and sends it.
 * `beforeSend` runs with the hash before the transaction leaves: the caller records it, so a
 * repeat of the payment follows this transaction instead of sending another. A stale sequence
 * (`txBadSeq`) re-reads the source and builds again; a full queue (`TRY_AGAIN_LATER`) sends the
 * same transaction again until `deadline`.
 */
export const submit = (
  context: SubmitContext,
  payment: CheckedPayment,
  terms: ExactTerms,
  source: SequenceSource,
  timeoutSeconds: number,
  deadline: number,
  beforeSend: (hash: string) => Effect.Effect<void>,
  unsent: (hash: string) => Effect.Effect<void>
): Effect.Effect<Submission, RpcUnavailable> =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt <= BAD_SEQUENCE_RETRIES; attempt++) {
      if (source.sequence === null) {
        const account = yield* context.rpc.account(source.address)
        if (account === null)
          return {
            _tag: "NotSent",
            detail: `sequence source ${source.address} does not exist on the ledger: create it with sextant facilitator channels`
          } as const
        source.sequence = account.sequence
      }
      const built = yield* buildSigned(context, payment, terms, source, source.sequence, timeoutSeconds)
      if (Either.isLeft(built)) return { _tag: "Refused", refusal: built.left } as const
      const hash = Buffer.from(built.right.hash()).toString("hex")
      yield* beforeSend(hash)
      const sentAt = Date.now()
      let answer = yield* context.rpc
        .send(built.right)
        .pipe(Effect.tapError(() => Effect.sync(() => (source.sequence = null))))
      while (answer.status === "TRY_AGAIN_LATER" && Date.now() + context.pollIntervalMs < deadline) {
        yield* Effect.sleep(context.pollIntervalMs)
        answer = yield* context.rpc.send(built.right)
      }
      if (answer.status === "PENDING" || answer.status === "DUPLICATE") {
        source.sequence = source.sequence + 1n
        return { _tag: "Sent", hash, sentAt } as const
      }
      yield* unsent(hash)
      if (answer.status === "ERROR" && isBadSequence(answer)) {
        source.sequence = null
        continue
      }
      return { _tag: "NotSent", detail: `sendTransaction answered ${answer.status}` } as const
    }
    return {
      _tag: "NotSent",
      detail: `the sequence of ${source.address} stayed stale after ${BAD_SEQUENCE_RETRIES} re-reads`
    } as const
  })

/** The ledger's verdict on a sent transaction by `deadline`: SUCCESS, FAILED, or still unknown. */
export const follow = (context: Pick<SubmitContext, "rpc" | "pollIntervalMs">, hash: string, deadline: number) =>
  Effect.gen(function* () {
    while (true) {
      const status = yield* Effect.orElseSucceed(context.rpc.status(hash), () => GetStatus.NOT_FOUND)
      if (status === GetStatus.SUCCESS) return "SUCCESS" as const
      if (status === GetStatus.FAILED) return "FAILED" as const
      if (Date.now() + context.pollIntervalMs > deadline) return "UNKNOWN" as const
      yield* Effect.sleep(context.pollIntervalMs)
    }
  })
