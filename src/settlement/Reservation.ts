import { randomUUID } from "node:crypto"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig, type Config } from "../config.js"
import { type BudgetRefusal, budgetLimitsOf } from "../domain/budgets.js"
import { type PrincipalId, SettlementId } from "../domain/ids.js"
import { mayReserveAgain, type NewEntry, type Reservation } from "../domain/settlements.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { type CheckRefusal, PaymentChecks } from "./PaymentChecks.js"
import type { Payment } from "./readPayment.js"
import { worstCaseUnits } from "./rules.js"

/** Steps 3 to 8 of a settle: every check, then the reservation in the journal; a repeat found on the way is `Existing`. */
export interface SettleReservationShape {
  /**
   * Steps 4 to 8 (Kind, Policy, Payee evidence, Transfer, Reserve): every check, then the
   * reservation; the checks write nothing. The payee's shortlist is read and judged inside the
   * reservation's transaction: on SQLite that runs on the writer, whose pages are current, where
   * the reader's cache is emptied by every commit. When the shortlist does not show a pass, the
   * transaction is given up before the whole set is read, outside it (it can be a thousand
   * resources, too long to hold the writer), and the reservation made after that whole-set
   * judgement passed. When a check refuses, step 3 (Repeats) still answers a repeat of a journaled
   * request from the journal, whatever the checks say now; anything else gets the refusal.
   */
  readonly reserve: (
    payment: Payment,
    idempotencyKey: string | undefined,
    principal: PrincipalId | null
  ) => Effect.Effect<Reservation<BudgetRefusal>, CheckRefusal>
}

export class SettleReservation extends Context.Tag("sextant/SettleReservation")<
  SettleReservation,
  SettleReservationShape
>() {
  static readonly Live = Layer.effect(
    SettleReservation,
    Effect.suspend(() => make)
  )
}

/** The `pending` entry a payment is reserved as, charged the fee ceiling and its worst-case spend. */
const newEntry = (payment: Payment, idempotencyKey: string | undefined, config: Config): NewEntry => ({
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
  worstCaseUnits: worstCaseUnits(payment.terms, payment.transfer),
  feeStroops: BigInt(config.budgets.feeCeilingStroops),
  authorization: payment.authorization
})

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const journal = yield* SettlementJournal
  const checks = yield* PaymentChecks
  const budgets = budgetLimitsOf(config)

  /** Step 3: Repeats, when a check refuses: the journaled entry this request repeats, else the refusal. */
  const findRepeat = Effect.fn("Settlement.findRepeat")(function* <E>(
    payment: Payment,
    idempotencyKey: string | undefined,
    refusal: E
  ) {
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
    inTransaction: Effect.Effect<void, E>
  ) {
    return yield* journal.reserve(newEntry(payment, idempotencyKey, config), budgets, nowMs, inTransaction)
  })

  return {
    reserve: (payment, idempotencyKey, principal) =>
      checks
        .judge(payment, principal, (inTransaction, nowMs) => reserve(payment, idempotencyKey, nowMs, inTransaction))
        .pipe(Effect.catchAll((refusal) => findRepeat(payment, idempotencyKey, refusal)))
  } satisfies SettleReservationShape
})
