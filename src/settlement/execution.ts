import { Effect, Option } from "effect"
import type { LedgerReaderShape, LedgerTransaction, TransferEvent } from "../ledger/LedgerReader.js"
import { searchRange } from "./reconcile.js"

/** A signed payment as the ledger can recognise it: its transfer and the payer's authorisation. */
export interface AuthorizedPayment {
  readonly asset: string
  readonly payer: string
  readonly payTo: string
  /** The authorisation's nonce (an int64, decimal) and the last ledger it is valid in. */
  readonly nonce: string
  readonly expirationLedger: number
  /** Whether a transferred amount is this payment's (`exact`: the amount; `upto`: within the worst case). */
  readonly amountMatches: (amount: bigint) => boolean
}

/** The transaction carries the payer's authorisation with this nonce: it executed this signed payment, not another. */
export const carriesAuthorization = (tx: LedgerTransaction, payment: AuthorizedPayment) =>
  tx.authorizations.some((a) => a.address === payment.payer && a.nonce === BigInt(payment.nonce))

/**
 * Step 10: Forward with failover (and the reconciler): the transfer that executed this signed
 * payment, if the ledger shows one: a `transfer` event of
 * the asset from the payer to the payee with a matching amount, in a successful transaction whose
 * envelope carries the payer's authorisation with this nonce. Another payment of the same amount
 * between the same parties does not count, nor does a transaction that merely consumed the nonce.
 */
export const findExecution = (ledger: LedgerReaderShape, payment: AuthorizedPayment, latestLedger: number) =>
  Effect.gen(function* () {
    const events = yield* ledger.transferEvents({
      contract: payment.asset,
      from: payment.payer,
      to: payment.payTo,
      ...searchRange(payment.expirationLedger, latestLedger)
    })
    for (const event of events) {
      if (!payment.amountMatches(event.amount)) continue
      const tx = yield* ledger.transaction(event.transactionHash)
      if (Option.isSome(tx) && tx.value.successful && carriesAuthorization(tx.value, payment))
        return Option.some<TransferEvent>(event)
    }
    return Option.none<TransferEvent>()
  })
