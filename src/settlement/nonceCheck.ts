import { Clock, Duration, Effect, Fiber, Ref } from "effect"
import { AppConfig } from "../config.js"
import { AuthorizationExpiresTooLate, NonceAlreadyConsumed } from "../domain/errors.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { authorizedPayment, type Payment } from "./readPayment.js"
import { authorizationHorizon } from "./reconcile.js"

/** The nonce pre-check's read: consumed or not, at which latest ledger (null: not read). */
export interface NonceRead {
  readonly consumed: boolean
  readonly latestLedger: number | null
}

/**
 * Step 9: Spent nonce: what the ledger read refuses before forwarding: a spent nonce (409), an
 * authorisation valid too long (400); null to go on.
 */
export const ledgerRefusal = (payment: Payment, read: NonceRead, maxTimeoutSeconds: number | undefined) => {
  if (read.consumed) {
    return new NonceAlreadyConsumed({
      message:
        `the payer's authorisation nonce ${payment.authorization?.nonce} is already consumed on the ledger: this signed ` +
        "payment was executed before or its nonce spent otherwise, so it cannot settle; it was not forwarded"
    })
  }
  const expiration = payment.authorization?.expirationLedger
  const horizon = authorizationHorizon(maxTimeoutSeconds)
  if (read.latestLedger === null || expiration === undefined || expiration - read.latestLedger <= horizon) return null
  return new AuthorizationExpiresTooLate({
    message:
      `the payer's authorisation is valid until ledger ${expiration}, ${expiration - read.latestLedger} ledgers past the ` +
      `latest (${read.latestLedger}); for maxTimeoutSeconds ${maxTimeoutSeconds ?? "(none)"} at most ${horizon} are accepted ` +
      "(one ledger a second, plus 2): sign it to expire sooner; it was not forwarded"
  })
}

/** Each ledger read after a backend's silence may take up to the ledger timeout; never more than a quarter of the settle deadline. */
export const ledgerReserveMsOf = (config: AppConfig["Type"]) =>
  Math.min(config.ledger.timeoutMs, (config.settleDeadlineSeconds * 1000) / 4)

/** Step 9's read, started early: the `nonceCheck` of PaymentChecks over the configured ledger. */
export const makeNonceCheck = Effect.gen(function* () {
  const config = yield* AppConfig
  const ledger = yield* LedgerReader
  const ledgerReserveMs = ledgerReserveMsOf(config)
  /** Until when (epoch ms) the nonce check leaves a ledger alone that just failed to answer. */
  const ledgerDownUntil = yield* Ref.make(0)

  /**
   * Whether the payer's nonce is already spent on the ledger (a payment executed before, by anyone),
   * and the latest ledger that answer was read at (one RPC call): a spent nonce is never
   * forwarded, nor an authorisation valid beyond its horizon from that ledger. Started before the
   * other checks and awaited after them, so the ledger's answer arrives while they run; a ledger
   * that cannot be read does not hold the payment up (the facilitator would fail the spent nonce
   * and refuse an expiration too far anyway, and "settled" is only ever concluded from a transfer
   * carrying this authorisation). After a failed read the ledger is not asked again for one
   * `ledger.pollIntervalSeconds`: during an outage each payment would otherwise pay for a failing
   * call. Nothing to ask (no payer authorisation, or the ledger left alone): no fiber is started.
   */
  return (payment: Payment) =>
    Effect.gen(function* () {
      const signed = authorizedPayment(payment)
      const nowMs = yield* Clock.currentTimeMillis
      const unread: NonceRead = { consumed: false, latestLedger: null }
      if (signed === null || nowMs < (yield* Ref.get(ledgerDownUntil))) return Effect.succeed(unread)
      const fiber = yield* Effect.fork(
        ledger.nonceAt(signed.payer, BigInt(signed.nonce)).pipe(
          Effect.timeout(Duration.millis(ledgerReserveMs)),
          Effect.catchAll(() =>
            Effect.as(Ref.set(ledgerDownUntil, nowMs + config.ledger.pollIntervalSeconds * 1000), unread)
          )
        )
      )
      return Fiber.join<NonceRead, never>(fiber)
    })
})
