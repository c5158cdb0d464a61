import { type Cause, Clock, Context, Duration, Effect, Either, Exit, Fiber, Layer, Option, Schema } from "effect"
import { randomUUID } from "node:crypto"
import { AppConfig } from "../config.js"
import {
  AllFacilitatorsFailed,
  AuthorizationExpiresTooLate,
  type AmountUsdMismatch,
  type DelegatedCredentialsRefused,
  FacilitatorsNotReady,
  type FeeBudgetExhausted,
  IdempotencyKeyReused,
  InvalidRequest,
  type InvalidPayerSignature,
  type MalformedPaymentTransaction,
  NoHealthyFacilitator,
  NonceAlreadyConsumed,
  type NotFound,
  notFound,
  PaymentAlreadySubmitted,
  type PolicyDenied,
  SettlementInProgress,
  SettlementIndeterminate,
  SettlementUnresolved,
  type SourceAccountCredentialsRefused,
  type TransferAmountMismatch,
  type TransferAssetMismatch,
  type TransferRecipientMismatch,
  type UnsupportedAsset,
  UnsupportedPaymentKind
} from "../domain/errors.js"
import { type EconomicEvent, evidenceShortfall } from "../domain/evidence.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import {
  awaitsConfirmation,
  type Completion,
  type FoundEntry,
  isPendingAnswer,
  type JournalEntry,
  mayReserveAgain,
  type Reservation,
  SETTLEMENT_PENDING,
  type SettlementTransition
} from "../domain/settlements.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { type SettleRequest, SettleResponse, type SettlementRecord } from "../domain/x402.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { StoreTransactions } from "../store/StoreTransactions.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { Instruments } from "../telemetry/Instruments.js"
import { measured, settleLabels } from "../telemetry/labels.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import { FacilitatorPool, type LedgerVerdict, type SettleGuard, type SettleOutcome } from "../x402/FacilitatorPool.js"
import { carriesAuthorization, findExecution } from "./execution.js"
import { judgeBudgets } from "./budgets.js"
import { worstCaseUnits } from "./rules.js"
import { authorizedPayment, ledgerRefusal, ledgerReserveMsOf, type Payment, PaymentChecks } from "./PaymentChecks.js"
import { type PrincipalId, type ResourceId, SettlementId } from "../domain/ids.js"

type SettleAnswer = typeof SettleResponse.Type

/** The resource a settle's evidence is about (null: the payee's, by `EconomicEventsRepo`'s rule) and why it is none, if so. */
interface EvidenceSubject {
  readonly resourceId: ResourceId | null
  readonly notEvidence: string | null
}

/** A settle as the HTTP layer decoded it. */
export interface SettleInput {
  /** The stock body `{x402Version, paymentPayload, paymentRequirements}`, plus this service's optional fields. */
  readonly request: SettleRequest
  /** The `Idempotency-Key` header, when sent. */
  readonly idempotencyKey: string | undefined
  /** The API key's principal; null in open mode, where the payer address (once its signature verified) is the principal. */
  readonly principal: PrincipalId | null
}

/** Every refusal a settle can answer with, each its own code and status. */
export type SettleError =
  | InvalidRequest
  | FacilitatorsNotReady
  | UnsupportedPaymentKind
  | NoHealthyFacilitator
  | AllFacilitatorsFailed
  | IdempotencyKeyReused
  | MalformedPaymentTransaction
  | DelegatedCredentialsRefused
  | SourceAccountCredentialsRefused
  | InvalidPayerSignature
  | PolicyDenied
  | FeeBudgetExhausted
  | TransferAssetMismatch
  | TransferRecipientMismatch
  | TransferAmountMismatch
  | AmountUsdMismatch
  | UnsupportedAsset
  | SettlementIndeterminate
  | PaymentAlreadySubmitted
  | SettlementInProgress
  | SettlementUnresolved
  | NonceAlreadyConsumed
  | AuthorizationExpiresTooLate

export interface SettlementShape {
  /** Checks, reserves, forwards and journals one settle; a repeat is answered from the journal. */
  readonly settle: (input: SettleInput) => Effect.Effect<SettleAnswer, SettleError>
  /** `settle`, also saying whether this request settled it (false: a repeat) and the payer, for the bazaar extension. */
  readonly settleReporting: (
    input: SettleInput
  ) => Effect.Effect<{ readonly answer: SettleAnswer; readonly settledNow: boolean; readonly payer: string }, SettleError>
  /** One journal entry; another principal's entry is NotFound to an API-key principal, as a missing one. */
  readonly get: (id: SettlementId, principal: PrincipalId | null) => Effect.Effect<SettlementRecord, NotFound>
  /** The journal, newest first, scoped like `get`. */
  readonly list: (
    query: { readonly state?: SettlementRecord["state"]; readonly before?: string; readonly limit?: number },
    principal: PrincipalId | null
  ) => Effect.Effect<ReadonlyArray<SettlementRecord>>
}

/** `/x402/settle` and `/x402/settlements`. */
export class Settlement extends Context.Tag("sextant/Settlement")<Settlement, SettlementShape>() {
  static readonly Live = Layer.effect(Settlement, Effect.suspend(() => make))
  static readonly Recovery = Layer.effectDiscard(Effect.suspend(() => recover))
}

/**
 * This service's own fields are taken out of paymentRequirements before forwarding, so a backend
 * receives the stock body; the payment payload itself goes as signed.
 */
const stockBody = (body: SettleRequest) => {
  const { amountUsd: _amountUsd, servicePolicy: _servicePolicy, ...requirements } = body.paymentRequirements
  return { ...body, paymentRequirements: requirements }
}

/**
 * How a 409 names the settlement it met: by id to its own principal only. Another principal's
 * settlement of the same payment is not named, since its id says nothing the caller may read.
 */
const naming = (entry: JournalEntry, principal: PrincipalId) =>
  entry.principal === principal
    ? { entry: `settlement ${entry.id}`, record: ` (GET /x402/settlements/${entry.id})` }
    : { entry: "the settlement", record: "" }

/** The stored answer of a refusal is never replayed (a refused payment is released and retried); a 200 is. */
const decodeAnswer = Schema.decodeUnknown(SettleResponse)

/** A repeat of a journaled request: the stored answer, or 409 when there is none to give. */
const replay = ({ entry, byKey }: FoundEntry, requestHash: string, principal: PrincipalId) => {
  const { entry: named, record } = naming(entry, principal)
  if (entry.requestHash !== requestHash) {
    return Effect.fail(
      byKey
        ? new IdempotencyKeyReused({ message: `the Idempotency-Key was already used for a different request (${named})` })
        : new PaymentAlreadySubmitted({
            message: `this signed payment was already submitted with different requirements (${named})`
          })
    )
  }
  if (entry.state === "pending") {
    return Effect.fail(new SettlementInProgress({ message: `${named} of this payment is still in progress` }))
  }
  if (entry.state === "indeterminate") {
    return Effect.fail(
      new SettlementUnresolved({
        message: `${named} of this payment was interrupted and its outcome is unknown; it is never ` +
          `re-submitted while it may have been paid. The reconciler is checking the ledger for it: once the ` +
          `ledger shows it paid this answer becomes the settlement, once it proves it unpaid a retry is settled anew${record}`
      })
    )
  }
  return entry.answer?.status === 200
    ? Effect.orDie(decodeAnswer(entry.answer.body))
    : Effect.dieMessage(`settlement ${entry.id} is ${entry.state} without a stored answer to replay`)
}

const errorsOf = (outcome: SettleOutcome) =>
  "failures" in outcome ? outcome.failures.map((f) => ({ backendId: f.backendId, error: f.detail })) : []

type ForwardRefusal = UnsupportedPaymentKind | FacilitatorsNotReady | NoHealthyFacilitator | AllFacilitatorsFailed | SettlementIndeterminate

/** How a forwarding outcome is journaled and answered; `network` and `payer` fill a success the ledger proved. */
const conclude = (
  id: SettlementId,
  outcome: SettleOutcome,
  network: string,
  payer: string
): { completion: Completion; answer: Either.Either<SettleAnswer, ForwardRefusal> } => {
  const errors = errorsOf(outcome)
  const refused = (state: Completion["state"], error: ForwardRefusal, status: number, backendId: string | null, submitted: boolean) => ({
    completion: {
      state,
      reason: error.message,
      submitted,
      backendId,
      transaction: null,
      payer: null,
      errors,
      answer: { status, body: { error: error.error, message: error.message } }
    },
    answer: Either.left(error)
  })
  switch (outcome._tag) {
    case "Answered": {
      const { response, backendId } = outcome
      if (isPendingAnswer(response)) {
        return {
          completion: {
            state: "pending",
            reason: `facilitator "${backendId}" broadcast it in transaction ${response.transaction} and has not seen it confirmed ` +
              `(${SETTLEMENT_PENDING}): a retry of the payment or the reconciler resolves it`,
            submitted: true,
            backendId,
            transaction: response.transaction,
            payer: response.payer ?? null,
            errors,
            answer: { status: 200, body: response }
          },
          answer: Either.right(response)
        }
      }
      const refusal = response.success ? [] : [{ backendId, error: response.errorReason ?? response.errorMessage ?? "settle refused" }]
      // A refusal naming no transaction shows the backend submitted nothing, so it cost no fee and
      // its reservation is released: payments that could never settle must not spend the budget.
      const submitted = response.success || response.transaction !== ""
      return {
        completion: {
          state: response.success ? "settled" : "failed",
          reason: response.success
            ? `facilitator "${backendId}" settled it${response.transaction === "" ? "" : ` in transaction ${response.transaction}`}`
            : `facilitator "${backendId}" answered success: false (${refusal[0]?.error})`,
          submitted,
          backendId,
          transaction: response.transaction === "" ? null : response.transaction,
          payer: response.payer ?? null,
          errors: [...errors, ...refusal],
          answer: { status: 200, body: response }
        },
        answer: Either.right(response)
      }
    }
    case "Executed": {
      const response = { success: true, transaction: outcome.transaction, network, payer }
      return {
        completion: {
          state: "settled",
          reason: outcome.reason,
          submitted: true,
          backendId: outcome.backendId,
          transaction: outcome.transaction,
          payer,
          errors,
          answer: { status: 200, body: response }
        },
        answer: Either.right(response)
      }
    }
    case "Indeterminate":
      return refused(
        "indeterminate",
        new SettlementIndeterminate({
          message: `facilitator "${outcome.backendId}" gave no usable answer, so the payment may or may not have been ` +
            `submitted: ${outcome.reason}. Settlement ${id} is journaled as indeterminate and resolved from the ledger ` +
            `(GET /x402/settlements/${id})`
        }),
        502,
        outcome.backendId,
        true
      )
    case "Failed":
      return refused(
        "failed",
        errors.length === 0
          ? new NoHealthyFacilitator({ message: "no facilitator supporting this payment is currently healthy" })
          : new AllFacilitatorsFailed({
              message: `every eligible facilitator failed: ${errors.map((e) => `${e.backendId}: ${e.error}`).join("; ")}`
            }),
        502,
        null,
        false
      )
    case "Unsupported":
      return refused("failed", outcome.error, outcome.error instanceof FacilitatorsNotReady ? 503 : 422, null, false)
  }
}

const toRecord = (entry: JournalEntry, decimals: number, history: ReadonlyArray<SettlementTransition>): SettlementRecord => ({
  id: entry.id,
  idempotencyKey: entry.idempotencyKey,
  state: entry.state,
  principal: entry.principal,
  network: entry.network,
  scheme: entry.scheme,
  payTo: entry.payTo,
  amount: entry.amount,
  worstCaseUsd: baseUnitsToUsd(entry.worstCaseUnits.toString(), decimals),
  backendId: entry.backendId,
  transaction: entry.transaction,
  payer: entry.payer,
  errors: entry.errors,
  createdAt: new Date(entry.createdAtMs).toISOString(),
  updatedAt: new Date(entry.updatedAtMs).toISOString(),
  history: history.map((t) => ({ from: t.from, to: t.to, reason: t.reason, at: new Date(t.atMs).toISOString() }))
})

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const journal = yield* SettlementJournal
  const pool = yield* FacilitatorPool
  const reader = yield* EvidenceReader
  const resources = yield* ResourceReadsRepo
  const recorder = yield* EvidenceRecorder
  const { transaction } = yield* StoreTransactions
  const instruments = yield* Instruments
  const lifecycle = yield* Lifecycle
  const ledger = yield* LedgerReader
  const checks = yield* PaymentChecks
  const { decimals } = config.asset
  const deadlineMs = config.settleDeadlineSeconds * 1000
  const ledgerReserveMs = ledgerReserveMsOf(config)

  /**
   * Step 3: Repeats, when a check refuses: a repeat of a journaled request gets its stored answer (or 409),
   * whatever the checks say now; anything else gets the refusal. (A request the checks pass is
   * looked up in the reservation's transaction, which answers a repeat the same way.)
   */
  const findRepeat = Effect.fn("Settlement.findRepeat")(function* <E>(payment: Payment, idempotencyKey: string | undefined, refusal: E) {
    const earlier = yield* journal.find({ principal: payment.principal, idempotencyKey, paymentId: payment.paymentId })
    if (Option.isSome(earlier) && !mayReserveAgain(earlier.value, payment.requestHash)) {
      return { _tag: "Existing", ...earlier.value } satisfies Reservation<never>
    }
    return yield* Effect.fail(refusal)
  })

  /** Step 8: Reserve: repeats again (for those that raced), spend window, fee budget and the `pending` entry, in one transaction. */
  const reserve = Effect.fn("Settlement.reserve")(function* <E>(
    payment: Payment,
    idempotencyKey: string | undefined,
    nowMs: number,
    checks: Effect.Effect<void, E>
  ) {
    const worst = worstCaseUnits(payment.terms, payment.transfer)
    const entry = {
      id: SettlementId.make(randomUUID()),
      idempotencyKey,
      paymentId: payment.paymentId,
      requestHash: payment.requestHash,
      principal: payment.principal,
      payer: payment.transfer.from,
      network: payment.terms.network,
      scheme: payment.terms.scheme,
      asset: payment.terms.asset,
      payTo: payment.terms.payTo,
      amount: payment.terms.amount,
      worstCaseUnits: worst,
      feeStroops: BigInt(config.budgets.feeCeilingStroops),
      authorization: payment.authorization
    }
    const sinceMs = nowMs - config.budgets.windowSeconds * 1000
    return yield* journal.reserve(entry, sinceMs, nowMs, (usage) => judgeBudgets(usage, entry, config.budgets, decimals, nowMs), checks)
  })

  /**
   * A facilitator's answer as economic evidence of the payee's listed resources: a success waits
   * for the ledger to confirm the transaction moves exactly the signed transfer; a `success: false`
   * counts against them. Stored in the transaction of the journal's outcome (one commit for both).
   */
  const evidenceOf = (completion: Completion, payment: Payment, atMs: number, subject: EvidenceSubject): EconomicEvent => ({
    source: "settlement",
    resourceId: subject.resourceId,
    ...(subject.notEvidence !== null ? { notEvidence: subject.notEvidence } : {}),
    payTo: payment.terms.payTo,
    success: completion.state === "settled",
    transactionHash: completion.transaction,
    at: new Date(atMs).toISOString(),
    payer: payment.transfer.from,
    expected: { payTo: payment.transfer.to, amount: payment.transfer.amount.toString(), scheme: "exact" }
  })

  /** The buyer's answer never waits on the evidence failing: it is logged. */
  const logEvidenceFailure = (id: SettlementId, payment: Payment) => (cause: Cause.Cause<unknown>) =>
    Effect.as(Effect.logError(`settlement ${id}: answered, but recording it as evidence for payee ${payment.terms.payTo} failed`, cause), false)

  /**
   * Step 10: Forward with failover: what the ledger says about the payment after a backend went silent. Consumed nonce: executed,
   * once the transfer in a transaction carrying this authorisation is found (else unknown).
   * Unconsumed while the authorisation is still valid: not executed, so the same payload may go
   * to the next backend. Anything else, or a ledger that cannot be read in time: unknown.
   */
  const ledgerVerdict = (payment: Payment, withinMs: number): Effect.Effect<LedgerVerdict> => {
    const signed = authorizedPayment(payment)
    if (signed === null) return Effect.succeed({ _tag: "Unknown", reason: "the payment carries no payer authorisation to look for on the ledger" })
    const unknown = (reason: string): LedgerVerdict => ({ _tag: "Unknown", reason })
    return Effect.gen(function* () {
      const latest = yield* ledger.latestLedger()
      if (yield* ledger.nonceConsumed(signed.payer, BigInt(signed.nonce))) {
        const execution = yield* findExecution(ledger, signed, latest)
        return Option.match(execution, {
          onNone: () => unknown(`the payer's nonce ${signed.nonce} is consumed but no transfer carrying it is on the ledger yet`),
          onSome: (event): LedgerVerdict => ({
            _tag: "Executed",
            transaction: event.transactionHash,
            reason: `the ledger shows the payment executed in transaction ${event.transactionHash} (ledger ${event.ledger}): ` +
              `its transfer, carrying the payer's nonce ${signed.nonce}`
          })
        })
      }
      if (latest >= signed.expirationLedger) {
        return unknown(`the payer's authorisation expired at ledger ${signed.expirationLedger} (latest ${latest})`)
      }
      return { _tag: "NotExecuted", reason: `the payer's nonce ${signed.nonce} is unconsumed at ledger ${latest}, valid until ${signed.expirationLedger}` } satisfies LedgerVerdict
    }).pipe(
      Effect.timeoutFail({ duration: Duration.millis(withinMs), onTimeout: () => unknown(`the ledger did not answer within ${withinMs} ms`) }),
      Effect.catchAll((e) => Effect.succeed("reason" in e ? e : unknown(`the ledger could not be read (${e.message})`)))
    )
  }

  /** The deadline and the ledger reads that make settle failover safe (FacilitatorPool's SettleGuard). */
  const guardOf = (id: SettlementId, payment: Payment, startedMs: number): SettleGuard => ({
    deadlineMs: startedMs + deadlineMs,
    ledgerReserveMs,
    verdict: (withinMs) => ledgerVerdict(payment, Math.min(withinMs, ledgerReserveMs)),
    // A further attempt costs one more fee ceiling: it is judged against the fee budgets like a reservation (no new spend).
    beforeRetry: (backendId, reason) =>
      Effect.flatMap(Clock.currentTimeMillis, (at) =>
        journal.attempt(
          id,
          { feeStroops: BigInt(config.budgets.feeCeilingStroops), reason: `forwarded again, to facilitator "${backendId}": ${reason}`, sinceMs: at - config.budgets.windowSeconds * 1000, nowMs: at },
          (usage) => judgeBudgets(usage, { worstCaseUnits: 0n }, config.budgets, decimals, at)
        )
      ).pipe(
        Effect.map((attempt) =>
          attempt._tag === "Charged" ? null : attempt._tag === "Refused" ? `a further attempt's fee is refused: ${attempt.error.message}` : "the settlement is no longer pending"
        ),
        Effect.catchAllCause((cause) =>
          Effect.as(Effect.logError(`settlement ${id}: its further attempt could not be journaled`, cause), "the further attempt could not be journaled")
        )
      )
  })

  /** Step 9: Spent nonce: a reservation released because the ledger refuses the payment; nothing was forwarded, so nothing is charged. */
  const refuseBeforeForwarding = Effect.fn("Settlement.refuseBeforeForwarding")(function* (id: SettlementId, error: NonceAlreadyConsumed | AuthorizationExpiresTooLate) {
    const completion: Completion = {
      state: "failed",
      reason: error.message,
      submitted: false,
      backendId: null,
      transaction: null,
      payer: null,
      errors: [],
      answer: { status: error instanceof NonceAlreadyConsumed ? 409 : 400, body: { error: error.error, message: error.message } }
    }
    yield* journal.complete(id, completion, yield* Clock.currentTimeMillis)
    return yield* Effect.fail(error)
  })

  /**
   * Step 10: Forward with failover, then step 11 (Outcome): the journal's `settled` / `failed` /
   * `indeterminate` (or `pending` with a backend's `settlement_pending` answer), then the evidence. Forwarding and recording run to the end even if the caller goes away (a daemon
   * fiber the caller only joins): an entry left `pending` would only be resolved, as
   * indeterminate, by the next restart. The backend timeouts inside still apply. It is counted as
   * in flight, so a graceful shutdown waits for its outcome to be journaled.
   */
  const forward = (id: SettlementId, request: SettleRequest, payment: Payment, startedMs: number) =>
    recordOutcome(id, payment, pool.settle(stockBody(request), payment.terms.network, payment.terms.scheme, guardOf(id, payment, startedMs))).pipe(
      Effect.withSpan("Settlement.forward")
    )

  /**
   * What the payment is evidence about: the resource it names (a listed one paying this payee),
   * else the payee's one listed resource; and whether it costs what that resource claims
   * (`evidenceShortfall`): a payment below the price, or naming no resource of a payee with
   * several, is stored as no evidence. A failed read must not keep the facilitator's answer from
   * the journal: the payment is then no evidence about any resource.
   */
  const evidenceSubject = (payment: Payment): Effect.Effect<EvidenceSubject> =>
    Effect.gen(function* () {
      const named = payment.paidUrl === undefined ? null : yield* resources.namedPayee(payment.paidUrl, payment.terms.payTo)
      const subject = named ?? (yield* resources.soleListedPayee(payment.terms.payTo))
      const record = subject === null ? Option.none() : yield* resources.get(subject)
      const notEvidence = Option.match(record, {
        onNone: () => `the payment names no listed resource of payee ${payment.terms.payTo}, which has not exactly one: no evidence about any`,
        onSome: (r) => evidenceShortfall({ id: r.resource.id, paymentOptions: r.paymentOptions }, { ...payment.terms, amount: payment.transfer.amount })
      })
      return { resourceId: named, notEvidence }
    }).pipe(Effect.catchAllCause(() => Effect.succeed({ resourceId: null, notEvidence: "the resources the payment may be about could not be read" })))

  /**
   * Journals and answers what `decide` comes to (a forwarding, or the resolution of a pending
   * answer), with the evidence. A `pending` completion is no evidence either way: the payee is
   * judged once the payment is confirmed or known unpaid.
   */
  const recordOutcome = (id: SettlementId, payment: Payment, decide: Effect.Effect<SettleOutcome>) => {
    const run = Effect.gen(function* () {
      // The resource the evidence is about is read while the backend works, off the answer's path.
      const named = yield* Effect.fork(evidenceSubject(payment))
      const outcome = yield* decide
      const { completion, answer } = conclude(id, outcome, payment.terms.network, payment.transfer.from)
      const at = yield* Clock.currentTimeMillis
      // Step 11: Outcome: journaled with its evidence in one commit, then answered.
      const journaled = journal.complete(id, completion, at).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logError(`settlement ${id}: recording its outcome failed; it will be indeterminate after a restart`, cause)
        )
      )
      // A facilitator answered (success or not): its evidence is stored with the outcome, and the
      // buyer gets the answer even if the evidence cannot be recorded.
      const evidence = Either.isRight(answer) && completion.state !== "pending"
        ? recorder.storeEconomic(evidenceOf(completion, payment, at, yield* Fiber.join(named))).pipe(Effect.catchAllCause(logEvidenceFailure(id, payment)))
        : Effect.succeed(false)
      // Committed without a flush (survives a process crash, not a power loss): the buyer need not wait for a second fsync.
      // Lost only with power, it leaves the entry `pending`, which the next start makes
      // `indeterminate` and the reconciler resolves from the ledger; the reservation before the
      // backend call stays fsynced (docs/decisions.md, Durability).
      const counts = yield* commitWithoutFlush(transaction(Effect.zipRight(journaled, evidence)))
      // Re-deriving the payee's resources (only a failure counts at once) runs after the commit,
      // outside the journal's transaction: it takes the recorder's lock, which a probe batch holds.
      if (counts) {
        yield* Effect.flatMap(reader.forPayee(payment.terms.payTo), (payees) => recorder.refreshAbout(payees.map((p) => p.record))).pipe(
          Effect.catchAllCause(logEvidenceFailure(id, payment))
        )
      }
      return answer
    })
    return lifecycle.forkTracked(run).pipe(Effect.flatMap(Fiber.join), Effect.flatten)
  }

  /**
   * Step 3: Repeats, of an entry a backend answered `settlement_pending` for: the outcome when its
   * payment is sent again: the ledger's, when the backend's transaction is there, successful and carrying this
   * payment's authorisation; else the same backend's answer to the same payload (it reconciles its
   * own broadcast), never another backend's, which could submit it a second time. A backend that
   * gives no usable answer leaves the entry pending: the stored pending answer is given again.
   */
  const resolvePending = Effect.fn("Settlement.resolvePending")(function* (entry: JournalEntry, request: SettleRequest, payment: Payment) {
    const transaction = entry.transaction ?? ""
    const backendId = entry.backendId ?? ""
    const signed = authorizedPayment(payment)
    const onLedger = signed === null
      ? Option.none()
      : yield* ledger.transaction(transaction).pipe(
          Effect.timeout(Duration.millis(ledgerReserveMs)),
          Effect.map(Option.filter((tx) => tx.successful && carriesAuthorization(tx, signed))),
          Effect.orElseSucceed(() => Option.none())
        )
    if (Option.isSome(onLedger)) {
      return yield* recordOutcome(entry.id, payment, Effect.succeed({
        _tag: "Executed",
        backendId,
        transaction,
        reason: `the ledger shows transaction ${transaction}, which facilitator "${backendId}" answered ${SETTLEMENT_PENDING} for, ` +
          `executed with the payer's authorisation`,
        failures: []
      }))
    }
    const asked = yield* pool.settleVia(backendId, stockBody(request), Duration.millis(deadlineMs - ledgerReserveMs))
    if (Either.isRight(asked)) {
      return yield* recordOutcome(entry.id, payment, Effect.succeed({ _tag: "Answered", backendId, response: asked.right, failures: [] }))
    }
    yield* Effect.logWarning(`settlement ${entry.id} stays pending: ${asked.left}`)
    return yield* Effect.orDie(decodeAnswer(entry.answer?.body))
  })

  /**
   * Steps 4 to 8 (Kind, Policy, Payee evidence, Transfer, Reserve): every check, then the
   * reservation; the checks write nothing. The payee's
   * shortlist is read and judged inside the reservation's transaction: on SQLite that runs on the
   * writer, whose pages are current, where the reader's cache is emptied by every commit (about
   * 0.25 ms a settle). When the shortlist does not show a pass, the transaction is given up before
   * the whole set is read, outside it (it can be a thousand resources, too long to hold the writer),
   * and the reservation made after that whole-set judgement passed.
   */
  const checkAndReserve = (payment: Payment, input: SettleInput) =>
    checks.judge(payment, input.principal, (inTransaction, nowMs) => reserve(payment, input.idempotencyKey, nowMs, inTransaction))

  /**
   * The settle pipeline, failing closed at each step, numbered as in docs/architecture.md, "The
   * flow of a settle" (step 1, Admit, is the HTTP layer's). The
   * payment is identified by its decoded transaction, so a repeat is recognised in any wrapper and
   * gets its stored answer whatever the backends' health, the budgets or the evidence are now; it
   * never reserves budget twice. The journal is read for it once: in the reservation's transaction
   * when every check passes, else before a check's refusal is answered (a first request reads it
   * once, not twice). The exception is an entry released because it never reached a backend: a
   * retry of that payment goes through the whole pipeline again.
   */
  const settle = Effect.fn("Settlement.settle")(function* (input: SettleInput) {
    const startedMs = yield* Clock.currentTimeMillis
    const payment = yield* checks.read(input.request, input.principal)
    const nonceRead = yield* checks.nonceCheck(payment)
    const reservation = yield* checkAndReserve(payment, input).pipe(
      Effect.catchAll((refusal) => findRepeat(payment, input.idempotencyKey, refusal))
    )
    const payer = payment.transfer.from
    switch (reservation._tag) {
      case "Existing":
        if (awaitsConfirmation(reservation.entry) && reservation.entry.requestHash === payment.requestHash) {
          return { answer: yield* resolvePending(reservation.entry, input.request, payment), settledNow: true, payer }
        }
        return { answer: yield* replay(reservation, payment.requestHash, payment.principal), settledNow: false, payer }
      case "Refused":
        return yield* Effect.fail(reservation.error)
      case "Reserved":
        const refused = ledgerRefusal(payment, yield* nonceRead, input.request.paymentRequirements.maxTimeoutSeconds)
        if (refused !== null) return yield* refuseBeforeForwarding(reservation.id, refused)
        return { answer: yield* forward(reservation.id, input.request, payment, startedMs), settledNow: true, payer }
    }
  })

  /** API-key principals, who may read only their own settlements; the open mode reads any. */
  const keyPrincipals = new Set(config.apiKeys.map((k) => k.principal))
  const readsAll = (principal: PrincipalId | null) => principal === null || !keyPrincipals.has(principal)

  /**
   * One journal entry for `GET /x402/settlements/{id}`. Another principal's entry is 404 to an
   * API-key principal, exactly as a missing one, so ids of others' payments cannot be probed.
   */
  const get = Effect.fn("Settlement.get")(function* (id: SettlementId, principal: PrincipalId | null) {
    const entry = yield* journal.get(id)
    return Option.isSome(entry) && (readsAll(principal) || entry.value.principal === principal)
      ? toRecord(entry.value, decimals, yield* journal.history(id))
      : yield* Effect.fail(notFound("settlement", id))
  })

  /** The journal for reconciliation (e.g. every `indeterminate` entry), newest first, scoped like `get`. */
  const list = Effect.fn("Settlement.list")(function* (
    query: { readonly state?: SettlementRecord["state"]; readonly before?: string; readonly limit?: number },
    principal: PrincipalId | null
  ) {
    const entries = yield* journal.list({
      limit: query.limit ?? 50,
      ...(query.state !== undefined ? { state: query.state } : {}),
      ...(query.before !== undefined ? { beforeMs: Date.parse(query.before) } : {}),
      ...(principal !== null && keyPrincipals.has(principal) ? { principal } : {})
    })
    return yield* Effect.forEach(entries, (entry) => Effect.map(journal.history(entry.id), (h) => toRecord(entry, decimals, h)))
  })

  /**
   * Every settle is counted by result and code, and timed, whatever it ends with. Answers whether
   * this request settled it (false: a repeat answered from the journal) and the payer, for the
   * bazaar extension.
   */
  const settleReporting = (input: SettleInput) =>
    measured(settle(input), (exit, seconds) => {
      const { result, code } = settleLabels(Exit.map(exit, (s) => s.answer))
      return instruments.settle(result, code, seconds)
    })

  return { settle: (input: SettleInput) => Effect.map(settleReporting(input), (s) => s.answer), settleReporting, get, list } satisfies SettlementShape
})

/**
 * Crash recovery: entries left `pending` by a previous run become `indeterminate`. Only the
 * serving process runs it, before it takes any settle; a second process on the same store (the
 * MCP server) must not, or it would mark the server's in-flight settles.
 */
const recover = Effect.gen(function* () {
  const journal = yield* SettlementJournal
  const recovered = yield* Effect.flatMap(Clock.currentTimeMillis, journal.recoverPending)
  if (recovered.length > 0) {
    yield* Effect.logWarning(`settlements interrupted by a restart are now indeterminate and will not be re-submitted: ${recovered.join(", ")}`)
  }
}).pipe(Effect.withSpan("Settlement.recover"))
