import { Deferred, Duration, Effect, Either, Option, Redacted, Ref, Schedule } from "effect"
import type { Config, EmbeddedFacilitator } from "../config.js"
import { networkPassphrase } from "../domain/stellar.js"
import type { FacilitatorStatus, SettleResponse, VerifyResponse } from "../domain/x402.js"
import { loadOrCreateFacilitatorKey } from "../keys/stellarKey.js"
import type { InstrumentsShape } from "../telemetry/Instruments.js"
import { BackendFailure, type BackendClient, type RawSupported } from "../x402/FacilitatorClient.js"
import { channelKeypair, makeSourcePool } from "./channels.js"
import { belowFloor, type SettleCounts, stroopsOf } from "./health.js"
import { makeFacilitatorRpc, type RpcUnavailable } from "./ledgerClient.js"
import { type PaymentRequest, readRequest, rebuild } from "./payment.js"
import { Reason, type Refusal } from "./reasons.js"
import { judgeSimulation } from "./simulation.js"
import { follow, type SubmitContext, submit } from "./submit.js"
import { type CheckedPayment, checkPayment, expirationWindow } from "./verifyRules.js"

type Verify = typeof VerifyResponse.Type
type Settle = typeof SettleResponse.Type

/** Kept back from a settle's time limit to answer in it (pending, with the hash) rather than be cut off. */
const ANSWER_MARGIN_MS = 1_000
/** Settles remembered by payer and nonce, so a repeat follows the first transaction instead of sending one. */
const REMEMBERED = 10_000

/** A settle of one payment this backend is sending or sent: its hash once built, and how it ended. */
interface Sent {
  hash: string
  readonly outcome: Deferred.Deferred<Settle, BackendFailure>
}

/**
 * The embedded Stellar `exact` facilitator as one backend of the pool: the same three calls an
 * HTTP facilitator answers, run in this process with the operator's fee account (and its channel
 * accounts) against the configured `ledger` endpoints. It reads the ledger only when a payment is
 * verified or settled, or on `balanceCheckSeconds` when the operator set it.
 */
export const makeEmbeddedBackend = (entry: EmbeddedFacilitator, index: number, config: Config, instruments: InstrumentsShape) =>
  Effect.gen(function* () {
    const key = yield* loadOrCreateFacilitatorKey(`facilitators[${index}].feeAccountKeyFile`, entry.feeAccountKeyFile)
    if (key.created) yield* Effect.logInfo(`created the fee account key ${key.path} (mode 0600); fund ${key.address} to let facilitator "${entry.id}" settle`)
    if (key.exposed) yield* Effect.logWarning(`${key.path} is readable by group or others; chmod 600 it`)
    const feeAccount = Redacted.value(key.signer)
    const channels = Array.from({ length: entry.channels }, (_, i) => channelKeypair(feeAccount, i))
    const sources = yield* makeSourcePool(channels.length === 0 ? [feeAccount] : channels)
    const own: ReadonlySet<string> = new Set([key.address, ...channels.map((c) => c.publicKey())])
    const passphrase = networkPassphrase(entry.network)
    const rpc = makeFacilitatorRpc(config.ledger, entry.network, config.ledger.timeoutMs)
    const context: SubmitContext = {
      rpc,
      passphrase,
      feeAccount,
      feeBump: channels.length > 0,
      inclusionFee: config.ledger.inclusionFeeStroops,
      feeCeilingStroops: BigInt(config.budgets.feeCeilingStroops),
      pollIntervalMs: entry.pollIntervalMs
    }
    const balance = yield* Ref.make<bigint | null>(null)
    const counts = yield* Ref.make<SettleCounts>({ settled: 0, failed: 0, pending: 0, refused: 0 })
    const sent = new Map<string, Sent>()
    const floor = stroopsOf(entry.minFeeBalanceXlm)

    const unreachable = (e: RpcUnavailable) => new BackendFailure({ backendId: entry.id, kind: "Unreachable", status: null, detail: e.message })
    const count = (outcome: keyof SettleCounts, ledgerSeconds: number | null = null) =>
      Effect.zipRight(Ref.update(counts, (c) => ({ ...c, [outcome]: c[outcome] + 1 })), instruments.embeddedSettle(entry.id, outcome, ledgerSeconds))

    const scope = yield* Effect.scope
    // One read at a time: a burst of settles asks the ledger once, not once each.
    const reading = yield* Effect.makeSemaphore(1)
    /** The balance and lease gauges of `/metrics`, set from what this backend knows now. */
    const reportState = Effect.flatMap(Ref.get(balance), (b) => Effect.flatMap(sources.inUse, (n) => instruments.embeddedState(entry.id, b, n)))
    const readBalance = rpc.account(key.address).pipe(
      Effect.flatMap((account) => Ref.set(balance, account?.balanceStroops ?? 0n)),
      Effect.zipRight(reportState),
      Effect.catchAll((e) => Effect.logWarning(`facilitator "${entry.id}": the fee account balance could not be read: ${e.message}`)),
      reading.withPermitsIfAvailable(1),
      Effect.asVoid
    )
    if (entry.balanceCheckSeconds !== null) {
      yield* readBalance.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(entry.balanceCheckSeconds))), Effect.forkScoped)
    }

    /** The checks that need no simulation, against the ledger's current window. */
    const check = (request: PaymentRequest) =>
      Effect.gen(function* () {
        const latest = yield* rpc.latestLedger
        const window = expirationWindow(latest, request.maxTimeoutSeconds, yield* rpc.ledgerSeconds(latest))
        return checkPayment(request.transaction, request.terms, own, window, passphrase)
      })

    /** The simulation rules, run with the fee account as source: what it needs is what the payment carries. */
    const simulate = (request: PaymentRequest, payment: CheckedPayment) =>
      Effect.map(rpc.simulate(rebuild(payment, key.address, 0n, context.inclusionFee, request.maxTimeoutSeconds, passphrase)), (answer) =>
        judgeSimulation(answer, payment.payer, request.terms, payment.auth)
      )

    const verify = (body: unknown) =>
      Effect.gen(function* () {
        const request = readRequest(body, entry.network)
        if (Either.isLeft(request)) return refusedVerify(request.left, undefined)
        const checked = yield* check(request.right)
        if (Either.isLeft(checked)) return refusedVerify(checked.left, undefined)
        const simulated = yield* simulate(request.right, checked.right)
        return Either.isLeft(simulated) ? refusedVerify(simulated.left, checked.right.payer) : ({ isValid: true, payer: checked.right.payer } satisfies Verify)
      }).pipe(Effect.mapError(unreachable), Effect.withSpan("EmbeddedFacilitator.verify"))

    /**
     * A settle of this payment another request owns: its outcome, or at the deadline pending with
     * its hash (a timeout when nothing was sent yet: the pool then asks the ledger).
     */
    const awaitSent = (earlier: Sent, payer: string, deadline: number) =>
      Deferred.await(earlier.outcome).pipe(
        Effect.timeoutOption(Math.max(0, deadline - Date.now())),
        Effect.flatMap(
          Option.match({
            onSome: Effect.succeed,
            onNone: () =>
              earlier.hash === ""
                ? Effect.fail(new BackendFailure({ backendId: entry.id, kind: "TimedOut", status: null, detail: "the same payment was still being settled by another request at the deadline" }))
                : Effect.succeed(pendingAnswer(entry.network, earlier.hash, payer))
          })
        )
      )

    /**
     * Claims the payment for this request, in one step with the lookup (no other fiber runs
     * between), so two settles of one payment never both send: the existing claim, or null.
     */
    const claim = (paymentKey: string, record: Sent) =>
      Effect.sync(() => {
        const earlier = sent.get(paymentKey)
        if (earlier !== undefined) return earlier
        sent.set(paymentKey, record)
        if (sent.size > REMEMBERED) sent.delete(sent.keys().next().value!)
        return null
      })

    /** Follows a sent transaction to its end, then frees its source and records the balance. */
    const conclude = (record: Sent, payer: string, sentAt: number, until: number, release: Effect.Effect<void>) =>
      Effect.gen(function* () {
        const status = yield* follow(context, record.hash, until)
        const seconds = (Date.now() - sentAt) / 1000
        const answer: Settle =
          status === "SUCCESS"
            ? { success: true, transaction: record.hash, network: entry.network, payer }
            : status === "FAILED"
              ? { success: false, errorReason: Reason.transactionFailed, errorMessage: "the transaction failed on the ledger", transaction: record.hash, network: entry.network, payer }
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
    const settlePayment = (request: PaymentRequest, payment: CheckedPayment, record: Sent, deadline: number) =>
      Effect.gen(function* () {
        const leased = yield* sources.lease(deadline - Date.now())
        if (Option.isNone(leased)) {
          return yield* new BackendFailure({ backendId: entry.id, kind: "Unreachable", status: null, detail: "every sequence source stayed leased until the settle deadline; nothing was sent" })
        }
        const source = leased.value
        yield* reportState
        const release = Effect.zipRight(sources.release(source), reportState)
        // Until its transaction left the queue (applied, failed or past its time bound) the source stays leased.
        const bound = Date.now() + (request.maxTimeoutSeconds + 30) * 1000
        const followOn = (sentAt: number) =>
          conclude(record, payment.payer, sentAt, bound, Effect.zipRight(Effect.sync(() => (source.sequence = null)), release)).pipe(Effect.forkIn(scope))
        const submission = yield* submit(
          context, payment, request.terms, source, request.maxTimeoutSeconds, deadline,
          (hash) => Effect.sync(() => (record.hash = hash)),
          () => Effect.sync(() => (record.hash = ""))
        ).pipe(
          Effect.catchAll((e) =>
            record.hash === ""
              ? Effect.zipRight(release, Effect.fail(unreachable(e)))
              : Effect.zipRight(followOn(Date.now()), Effect.fail(new BackendFailure({ backendId: entry.id, kind: "Transport", status: null, detail: `sending transaction ${record.hash} failed: ${e.message}` })))
          )
        )
        if (submission._tag === "Refused") return yield* Effect.as(Effect.zipRight(release, count("refused")), refusedSettle(entry.network, submission.refusal, payment.payer))
        if (submission._tag === "NotSent") {
          yield* release
          return { success: false, errorReason: Reason.submissionFailed, errorMessage: submission.detail, transaction: "", network: entry.network, payer: payment.payer } satisfies Settle
        }
        const answer = yield* conclude(record, payment.payer, submission.sentAt, deadline, release)
        if (answer.success || answer.errorReason !== Reason.pending) return answer
        yield* count("pending")
        yield* followOn(submission.sentAt)
        return answer
      })

    /** The claimed payment judged, sent and followed; its claim ends with the outcome unless a transaction is still out. */
    const settleClaimed = (request: PaymentRequest, payment: CheckedPayment, paymentKey: string, record: Sent, deadline: number) =>
      Effect.gen(function* () {
        const simulated = yield* simulate(request, payment).pipe(Effect.mapError(unreachable))
        if (Either.isLeft(simulated)) return yield* Effect.as(count("refused"), refusedSettle(entry.network, simulated.left, payment.payer))
        return yield* settlePayment(request, payment, record, deadline)
      }).pipe(
        Effect.tapBoth({
          // Nothing sent: the claim ends, and a later settle of the payment may try again.
          onFailure: (failure) =>
            record.hash === "" ? Effect.zipRight(Effect.sync(() => sent.delete(paymentKey)), Deferred.fail(record.outcome, failure)) : Effect.void,
          onSuccess: (answer) =>
            answer.errorReason === Reason.pending
              ? Effect.void
              : Effect.zipRight(Deferred.succeed(record.outcome, answer), answer.transaction === "" ? Effect.sync(() => sent.delete(paymentKey)) : Effect.void)
        })
      )

    const settle = (body: unknown, timeout: Duration.DurationInput) =>
      Effect.gen(function* () {
        const deadline = Date.now() + Duration.toMillis(timeout) - ANSWER_MARGIN_MS
        const request = readRequest(body, entry.network)
        if (Either.isLeft(request)) return yield* Effect.as(count("refused"), refusedSettle(entry.network, request.left, undefined))
        const checked = yield* check(request.right).pipe(Effect.mapError(unreachable))
        if (Either.isLeft(checked)) return yield* Effect.as(count("refused"), refusedSettle(entry.network, checked.left, undefined))
        const paymentKey = `${checked.right.payer}:${checked.right.nonce}`
        const record: Sent = { hash: "", outcome: yield* Deferred.make<Settle, BackendFailure>() }
        const earlier = yield* claim(paymentKey, record)
        if (earlier !== null) return yield* awaitSent(earlier, checked.right.payer, deadline)
        return yield* settleClaimed(request.right, checked.right, paymentKey, record, deadline)
      }).pipe(Effect.withSpan("EmbeddedFacilitator.settle"))

    const supported: RawSupported = {
      kinds: [{ x402Version: 2, scheme: "exact", network: entry.network, extra: { areFeesSponsored: true } }],
      extensions: [],
      signers: { [entry.network]: [...own] }
    }

    const status = Effect.gen(function* () {
      const feeBalance = yield* Ref.get(balance)
      return {
        network: entry.network,
        feeAccount: key.address,
        feeBalanceStroops: feeBalance === null ? null : feeBalance.toString(),
        minFeeBalanceStroops: floor.toString(),
        channels: channels.length,
        leasesInUse: yield* sources.inUse,
        settles: yield* Ref.get(counts)
      } satisfies FacilitatorStatus["embedded"]
    })

    return {
      id: entry.id,
      url: `embedded ${entry.network} (fee account ${key.address})`,
      supported: () => Effect.succeed(supported),
      verify: (body: unknown, _timeout: Duration.DurationInput) => verify(body),
      settle,
      unhealthyReason: () => {
        const current = Effect.runSync(Ref.get(balance))
        return current !== null && belowFloor(current, floor) ? `fee account ${key.address} holds ${current} stroops, below the floor of ${floor}` : null
      },
      embedded: status
    } satisfies BackendClient
  })

const refusedVerify = (refusal: Refusal, payer: string | undefined): Verify => ({
  isValid: false,
  invalidReason: refusal.reason,
  invalidMessage: refusal.message,
  ...(payer === undefined ? {} : { payer })
})

const refusedSettle = (network: string, refusal: Refusal, payer: string | undefined): Settle => ({
  success: false,
  errorReason: refusal.reason,
  errorMessage: refusal.message,
  transaction: "",
  network,
  ...(payer === undefined ? {} : { payer })
})

const pendingAnswer = (network: string, hash: string, payer: string): Settle => ({
  success: false,
  errorReason: Reason.pending,
  errorMessage: `transaction ${hash} was sent and had not reached the ledger by the settle deadline`,
  transaction: hash,
  network,
  payer
})
