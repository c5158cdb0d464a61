import { Effect, Ref } from "effect"
import { OverSpendLimit, type Reservation, type SpendLedgerShape } from "./SpendLedger.js"

/** The spend window and the session cap together: both reserve before anything is signed. */
export const makeSpendGuard = (ledger: SpendLedgerShape, payer: string, sessionCap: bigint | null) =>
  Effect.map(Ref.make(0n), (sessionSpent) => {
    const sessionShare = (amount: bigint) => (sessionCap === null ? 0n : amount)
    return {
      reserve: (amount: bigint, resourceId: string) =>
        Effect.gen(function* () {
          const reservation = yield* ledger.reserve(payer, amount, resourceId)
          if (sessionCap === null) return reservation
          const over = yield* Ref.modify(sessionSpent, (spent) =>
            spent + amount <= sessionCap ? [null, spent + amount] : [spent, spent]
          )
          if (over === null) return reservation
          yield* ledger.release(reservation)
          return yield* new OverSpendLimit({
            spent: over.toString(),
            amount: amount.toString(),
            limit: sessionCap.toString()
          })
        }),
      /** Nothing was signed under it. */
      release: (reservation: Reservation, reserved: bigint) =>
        Effect.zipRight(
          ledger.release(reservation),
          Ref.update(sessionSpent, (spent) => spent - sessionShare(reserved))
        ),
      /** A signed payment left (once, or resent under its payment identifier): it counts once, at the amount signed (at most the reserved ceiling). */
      commit: (reservation: Reservation, reserved: bigint, signed: bigint, paymentIdentifier?: string) =>
        Effect.zipRight(
          ledger.commit(reservation, signed, paymentIdentifier),
          Ref.update(sessionSpent, (spent) => spent - sessionShare(reserved - signed))
        )
    }
  })
export type SpendGuard = Effect.Effect.Success<ReturnType<typeof makeSpendGuard>>
