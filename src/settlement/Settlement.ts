import { Clock, Context, Effect, Exit, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import {
  type AllFacilitatorsFailed,
  type AmountUsdMismatch,
  type AuthorizationExpiresTooLate,
  type DelegatedCredentialsRefused,
  type FacilitatorsNotReady,
  type FeeBudgetExhausted,
  type IdempotencyKeyReused,
  type InvalidPayerSignature,
  type InvalidRequest,
  type MalformedPaymentTransaction,
  type NoHealthyFacilitator,
  type NonceAlreadyConsumed,
  type NotFound,
  notFound,
  type PaymentAlreadySubmitted,
  type PolicyDenied,
  type SettlementIndeterminate,
  type SettlementInProgress,
  type SettlementUnresolved,
  type SourceAccountCredentialsRefused,
  type TransferAmountMismatch,
  type TransferAssetMismatch,
  type TransferRecipientMismatch,
  type UnsupportedAsset,
  type UnsupportedPaymentKind
} from "../domain/errors.js"
import type { PrincipalId, SettlementId } from "../domain/ids.js"
import { awaitsConfirmation } from "../domain/settlements.js"
import type { SettlementRecord, SettleRequest } from "../domain/x402.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { Instruments } from "../telemetry/Instruments.js"
import { measured, settleLabels } from "../telemetry/labels.js"
import { Forwarding } from "./Forwarding.js"
import { LedgerGuard } from "./LedgerGuard.js"
import { ledgerRefusal } from "./nonceCheck.js"
import { OutcomeRecord } from "./OutcomeRecord.js"
import type { SettleAnswer } from "./outcome.js"
import { PaymentChecks } from "./PaymentChecks.js"
import { SettleReservation } from "./Reservation.js"
import { replay } from "./replay.js"
import { toRecord } from "./settlementRecord.js"

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
  ) => Effect.Effect<
    { readonly answer: SettleAnswer; readonly settledNow: boolean; readonly payer: string },
    SettleError
  >
  /** One journal entry; another principal's entry is NotFound to an API-key principal, as a missing one. */
  readonly get: (id: SettlementId, principal: PrincipalId | null) => Effect.Effect<SettlementRecord, NotFound>
  /** The journal, newest first, scoped like `get`. */
  readonly list: (
    query: { readonly state?: SettlementRecord["state"]; readonly before?: string; readonly limit?: number },
    principal: PrincipalId | null
  ) => Effect.Effect<ReadonlyArray<SettlementRecord>>
}

/**
 * The steps of a settle, one hop from `make` each: checks and reservation, forwarding (guarded by
 * the ledger) and the journal record of its outcome. Provided here, so the app's layer graph
 * sees one settlement service over the same dependencies as before the steps were apart.
 */
const StepsLive = Layer.mergeAll(SettleReservation.Live, Forwarding.Live).pipe(
  Layer.provideMerge(Layer.mergeAll(LedgerGuard.Live, OutcomeRecord.Live))
)

/** `/x402/settle` and `/x402/settlements`. */
export class Settlement extends Context.Tag("sextant/Settlement")<Settlement, SettlementShape>() {
  static readonly Live = Layer.effect(
    Settlement,
    Effect.suspend(() => make)
  ).pipe(Layer.provide(Layer.suspend(() => StepsLive)))
  static readonly Recovery = Layer.effectDiscard(Effect.suspend(() => recover))
}

/**
 * The settle pipeline, failing closed at each step, numbered as in docs/architecture.md, "The
 * flow of a settle" (step 1, Admit, is the HTTP layer's). The payment is identified by its decoded
 * transaction, so a repeat is recognised in any wrapper and gets its stored answer whatever the
 * backends' health, the budgets or the evidence are now; it never reserves budget twice. The
 * journal is read for it once: in the reservation's transaction when every check passes, else
 * before a check's refusal is answered. The exception is an entry released because it never
 * reached a backend: a retry of that payment goes through the whole pipeline again.
 */
const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const checks = yield* PaymentChecks
  const reservations = yield* SettleReservation
  const forwarding = yield* Forwarding
  const outcomes = yield* OutcomeRecord
  const journal = yield* SettlementJournal
  const instruments = yield* Instruments

  const settle = Effect.fn("Settlement.settle")(function* (input: SettleInput) {
    const startedMs = yield* Clock.currentTimeMillis
    // Step 2: Read the payment.
    const payment = yield* checks.read(input.request, input.principal)
    // Step 9's ledger read starts now and is joined after the reservation.
    const nonceRead = yield* checks.nonceCheck(payment)
    // Steps 3 to 8: Repeats, Kind, Policy, Payee evidence, Transfer, Reserve.
    const reservation = yield* reservations.reserve(payment, input.idempotencyKey, input.principal)
    const payer = payment.transfer.from
    switch (reservation._tag) {
      case "Existing":
        // Step 3: Repeats: answered from the journal (or resolved, when a backend left it pending).
        if (awaitsConfirmation(reservation.entry) && reservation.entry.requestHash === payment.requestHash) {
          return {
            answer: yield* forwarding.resolvePending(reservation.entry, input.request, payment),
            settledNow: true,
            payer
          }
        }
        return { answer: yield* replay(reservation, payment.requestHash, payment.principal), settledNow: false, payer }
      case "Refused":
        return yield* Effect.fail(reservation.error)
      case "Reserved": {
        // Step 9: Spent nonce.
        const refused = ledgerRefusal(payment, yield* nonceRead, input.request.paymentRequirements.maxTimeoutSeconds)
        if (refused !== null) return yield* outcomes.refuseBeforeForwarding(reservation.id, refused)
        // Steps 10 and 11: Forward with failover, Outcome.
        return {
          answer: yield* forwarding.forward(reservation.id, input.request, payment, startedMs),
          settledNow: true,
          payer
        }
      }
    }
  })

  /** Every settle is counted by result and code, and timed, whatever it ends with. */
  const settleReporting = (input: SettleInput) =>
    measured(settle(input), (exit, seconds) => {
      const { result, code } = settleLabels(Exit.map(exit, (s) => s.answer))
      return instruments.settle(result, code, seconds)
    })

  const { decimals } = config.asset
  /** API-key principals, who may read only their own settlements; the open mode reads any. */
  const keyPrincipals = new Set(config.apiKeys.map((k) => k.principal))
  const readsAll = (principal: PrincipalId | null) => principal === null || !keyPrincipals.has(principal)

  // Another principal's entry is 404 to an API-key principal, exactly as a missing one, so ids of others' payments cannot be probed.
  const get = Effect.fn("Settlement.get")(function* (id: SettlementId, principal: PrincipalId | null) {
    const entry = yield* journal.get(id)
    return Option.isSome(entry) && (readsAll(principal) || entry.value.principal === principal)
      ? toRecord(entry.value, decimals, yield* journal.history(id))
      : yield* Effect.fail(notFound("settlement", id))
  })

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
    return yield* Effect.forEach(entries, (entry) =>
      Effect.map(journal.history(entry.id), (h) => toRecord(entry, decimals, h))
    )
  })

  return {
    settle: (input: SettleInput) => Effect.map(settleReporting(input), (s) => s.answer),
    settleReporting,
    get,
    list
  } satisfies SettlementShape
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
    yield* Effect.logWarning(
      `settlements interrupted by a restart are now indeterminate and will not be re-submitted: ${recovered.join(", ")}`
    )
  }
}).pipe(Effect.withSpan("Settlement.recover"))
