import { Clock, Context, Data, Duration, Effect, Either, Fiber, Layer, Ref } from "effect"
import { createHash } from "node:crypto"
import { AppConfig } from "../config.js"
import { AuthorizationExpiresTooLate, InvalidRequest, NonceAlreadyConsumed, type PolicyDenied } from "../domain/errors.js"
import { type ProviderEvidence, providerEvidenceOf } from "../domain/evidence.js"
import { type PaymentId, PrincipalId } from "../domain/ids.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { SettleRequest } from "../domain/x402.js"
import { canonicalize } from "../encoding/canonicalJson.js"
import { LedgerReader } from "../ledger/LedgerReader.js"
import { policyContext } from "../policy/evaluate.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"
import type { AuthorizedPayment } from "./execution.js"
import { authorizationHorizon } from "./reconcile.js"
import { type NamedPolicy, paidUrlOf, paymentDenial, paymentOption, payeeDenial, type SettleTerms, transferMismatch, worstCaseUnits } from "./rules.js"
import { termsOf } from "./terms.js"
import { decodePayment, type PayerAuthorization, type Transfer } from "../ledger/transfer.js"

/** The payment a settle or a verify carries, read from its signed transaction rather than from what the body says. */
export interface Payment {
  readonly terms: SettleTerms
  readonly transfer: Transfer
  readonly authorization: PayerAuthorization | null
  readonly paymentId: PaymentId
  /** Hash of what is asked of the payment: a repeat must ask the same, whatever wrapper it comes in. */
  readonly requestHash: string
  readonly principal: PrincipalId
  /** The resource the payment says it pays for, if it names one: the payee is judged on it. */
  readonly paidUrl: string | undefined
}

/** The nonce pre-check's read: consumed or not, at which latest ledger (null: not read). */
export interface NonceRead {
  readonly consumed: boolean
  readonly latestLedger: number | null
}

/** The payee's shortlist did not show a pass: the whole set decides, outside the reservation's transaction. */
export class PayeeUndecided extends Data.TaggedError("PayeeUndecided") {}

/**
 * The checks of a payment that need no facilitator: verify and settle both run them, through this
 * one service, so a verify never calls valid what settle would refuse (docs/architecture.md, "The
 * flow of a settle", steps 2 and 4 to 7, and the nonce of step 9).
 */
export interface PaymentChecksShape {
  /** Step 2: the terms this service can value, the signed transfer (credential form, payer signature), the principal. */
  readonly read: (request: SettleRequest, principal: PrincipalId | null) => ReturnType<typeof paymentOf>
  /**
   * Steps 4 to 7: kind, policy, payee evidence and transfer terms. `within` runs the part judged on
   * the payee's shortlist (settle: inside the reservation's transaction; verify: as it is); when the
   * shortlist shows no pass, the whole set is judged outside it and `within` runs with nothing left to check.
   */
  readonly judge: <A, X>(
    payment: Payment,
    principal: PrincipalId | null,
    within: (checks: Effect.Effect<void, ShortlistRefusal>, nowMs: number) => Effect.Effect<A, X>
  ) => Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal>
  /**
   * Starts the read of whether the payer's nonce is already spent on the ledger, and of the latest
   * ledger; the effect it returns awaits the answer (unread when there is nothing to ask or the
   * ledger cannot say in time). `ledgerRefusal` judges it.
   */
  readonly nonceCheck: (payment: Payment) => Effect.Effect<Effect.Effect<NonceRead>>
}

type TransferRefusal = NonNullable<ReturnType<typeof transferMismatch>>
/** What the part judged within may fail with; `PayeeUndecided` is not a refusal: the whole set is judged then. */
type ShortlistRefusal = PolicyDenied | TransferRefusal | PayeeUndecided
type JudgeRefusal = Effect.Effect.Error<ReturnType<FacilitatorPool["Type"]["checkKind"]>> | PolicyDenied | TransferRefusal
/** Every refusal of these checks. */
export type CheckRefusal = Effect.Effect.Error<ReturnType<typeof paymentOf>> | JudgeRefusal | NonceAlreadyConsumed | AuthorizationExpiresTooLate

export class PaymentChecks extends Context.Tag("sextant/PaymentChecks")<PaymentChecks, PaymentChecksShape>() {
  static readonly Live = Layer.effect(PaymentChecks, Effect.suspend(() => make))
}

/**
 * Open mode's one principal for payers no signature here proved (contract accounts, and entries
 * signed by keys other than the payer's): they share one budget, so a payment "from" someone else
 * never spends that someone's.
 */
const UNVERIFIED_PAYERS = PrincipalId.make("open:unverified-payer")

/** sha256 of the canonical JSON, so key order and whitespace do not make two requests differ. */
export const contentHash = (value: unknown) =>
  Either.mapBoth(canonicalize(value), {
    onLeft: (e) => new InvalidRequest({ message: `the request cannot be hashed: ${e.message}` }),
    onRight: (text) => createHash("sha256").update(text).digest("hex")
  })

/**
 * Step 9: Spent nonce: what the ledger read refuses before forwarding: a spent nonce (409), an
 * authorisation valid too long (400); null to go on.
 */
export const ledgerRefusal = (payment: Payment, read: NonceRead, maxTimeoutSeconds: number | undefined) => {
  if (read.consumed) {
    return new NonceAlreadyConsumed({
      message: `the payer's authorisation nonce ${payment.authorization?.nonce} is already consumed on the ledger: this signed ` +
        "payment was executed before or its nonce spent otherwise, so it cannot settle; it was not forwarded"
    })
  }
  const expiration = payment.authorization?.expirationLedger
  const horizon = authorizationHorizon(maxTimeoutSeconds)
  if (read.latestLedger === null || expiration === undefined || expiration - read.latestLedger <= horizon) return null
  return new AuthorizationExpiresTooLate({
    message: `the payer's authorisation is valid until ledger ${expiration}, ${expiration - read.latestLedger} ledgers past the ` +
      `latest (${read.latestLedger}); for maxTimeoutSeconds ${maxTimeoutSeconds ?? "(none)"} at most ${horizon} are accepted ` +
      "(one ledger a second, plus 2): sign it to expire sooner; it was not forwarded"
  })
}

/** Each ledger read after a backend's silence may take up to the ledger timeout; never more than a quarter of the settle deadline. */
export const ledgerReserveMsOf = (config: AppConfig["Type"]) => Math.min(config.ledger.timeoutMs, (config.settleDeadlineSeconds * 1000) / 4)

/** The payment as the ledger can recognise it; null without an address-credential authorisation of the payer. */
export const authorizedPayment = (payment: Payment): AuthorizedPayment | null =>
  payment.authorization === null
    ? null
    : {
        asset: payment.transfer.asset,
        payer: payment.transfer.from,
        payTo: payment.transfer.to,
        nonce: payment.authorization.nonce,
        expirationLedger: payment.authorization.expirationLedger,
        amountMatches: (amount) => amount === payment.transfer.amount
      }

const paymentOf = (request: SettleRequest, principal: PrincipalId | null, assetContract: string) =>
  Effect.gen(function* () {
    const terms = yield* termsOf(request, assetContract)
    const { paymentId, transfer, authorization, payerVerified } = yield* decodePayment(request.paymentPayload.payload.transaction, terms.network)
    const requestHash = yield* contentHash({ x402Version: request.x402Version, paymentId, paymentRequirements: request.paymentRequirements })
    // Open mode keys budgets and idempotency on the payer only when its signature proved it.
    const payer = principal ?? (payerVerified ? PrincipalId.make(transfer.from) : UNVERIFIED_PAYERS)
    return { terms, transfer, authorization, paymentId, requestHash, principal: payer, paidUrl: paidUrlOf(request) } satisfies Payment
  })

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const pool = yield* FacilitatorPool
  const reader = yield* EvidenceReader
  const ledger = yield* LedgerReader
  const { decimals, assetContract } = config.asset
  const ledgerReserveMs = ledgerReserveMsOf(config)
  /** Until when (epoch ms) the nonce check leaves a ledger alone that just failed to answer. */
  const ledgerDownUntil = yield* Ref.make(0)

  /**
   * The policies a payment must pass: the request's servicePolicy and, for an API-key principal,
   * the policy configured with its key (every entry of the principal that has one).
   */
  const buyerPolicies = (servicePolicy: AgentPolicy, principal: PrincipalId | null): ReadonlyArray<NamedPolicy> => [
    { name: "servicePolicy", policy: servicePolicy },
    ...config.apiKeys.flatMap((k) =>
      k.principal === principal && k.policy !== undefined ? [{ name: `the policy of principal "${k.principal}"`, policy: k.policy }] : []
    )
  ]

  /** Step 2: Read the payment. */
  const readPayment = Effect.fn("Settlement.readPayment")(function* (request: SettleRequest, principal: PrincipalId | null) {
    return yield* paymentOf(request, principal, assetContract)
  })

  /** Step 5: Policy: the buyer policies on the worst case of what would actually be paid. */
  const checkPolicies = Effect.fn("Settlement.checkPolicies")(function* (payment: Payment, policies: ReadonlyArray<NamedPolicy>, nowMs: number) {
    const option = paymentOption(payment.terms, worstCaseUnits(payment.terms, payment.transfer), decimals)
    const denial = paymentDenial(policies, option, policyContext(config, new Date(nowMs)))
    if (denial) return yield* Effect.fail(denial)
    return option
  })

  /**
   * Step 6: Payee evidence: the payee's listed resources and their evidence, in two parts. The shortlist holds a
   * quarantined resource and one of a denied provider when the whole set has one (the rules about
   * "any" resource), and a few that could pass (the rule about "some"): if they pass, the whole set
   * passes too (docs/decisions.md, Settlement pipeline). `checkPayee` answers whether
   * they do; `checkWholePayee` judges the whole set, for a refusal's exact reason or a payee whose
   * passing resources were not among the few.
   */
  const payeeJudge = (payment: Payment, policies: ReadonlyArray<NamedPolicy>, option: ReturnType<typeof paymentOption>, nowMs: number) =>
    (payees: ReadonlyArray<ProviderEvidence>) => payeeDenial(policies, option, payees, policyContext(config, new Date(nowMs)), payment.paidUrl, config.ingestion.untrustedPayeeStanding)

  const checkPayee = Effect.fn("Settlement.checkPayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const deniedProviders = policies.flatMap(({ policy }) => policy.denyProviders ?? [])
    return payeeJudge(payment, policies, option, nowMs)(yield* reader.payeeShortlist(payment.terms.payTo, deniedProviders, payment.paidUrl)) === undefined
  })

  const checkWholePayee = Effect.fn("Settlement.checkWholePayee")(function* (
    payment: Payment,
    policies: ReadonlyArray<NamedPolicy>,
    option: ReturnType<typeof paymentOption>,
    nowMs: number
  ) {
    const refusal = payeeJudge(payment, policies, option, nowMs)((yield* reader.forPayee(payment.terms.payTo)).map(providerEvidenceOf))
    if (refusal) return yield* Effect.fail(refusal)
  })

  /** Step 7: Transfer: the signed transfer pays what the requirements say. */
  const checkTransfer = Effect.fn("Settlement.checkTransfer")(function* (payment: Payment) {
    const mismatch = transferMismatch(payment.terms, payment.transfer, decimals)
    if (mismatch) return yield* Effect.fail(mismatch)
  })

  const judge = <A, X>(
    payment: Payment,
    principal: PrincipalId | null,
    within: (checks: Effect.Effect<void, ShortlistRefusal>, nowMs: number) => Effect.Effect<A, X>
  ): Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal> =>
    Effect.gen(function* () {
      // Step 4: Kind.
      yield* pool.checkKind(payment.terms.network, payment.terms.scheme)
      const nowMs = yield* Clock.currentTimeMillis
      const policies = buyerPolicies(payment.terms.policy, principal)
      const option = yield* checkPolicies(payment, policies, nowMs)
      const shortlisted: Effect.Effect<void, ShortlistRefusal> = Effect.gen(function* () {
        if (!(yield* checkPayee(payment, policies, option, nowMs))) return yield* new PayeeUndecided()
        yield* checkTransfer(payment)
      })
      return yield* within(shortlisted, nowMs).pipe(
        Effect.catchIf(
          (e): e is X & PayeeUndecided => e instanceof PayeeUndecided,
          () => Effect.zipRight(Effect.zipRight(checkWholePayee(payment, policies, option, nowMs), checkTransfer(payment)), within(Effect.void, nowMs))
        )
      ) as Effect.Effect<A, Exclude<X, PayeeUndecided> | JudgeRefusal>
    })

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
  const nonceCheck = (payment: Payment) =>
    Effect.gen(function* () {
      const signed = authorizedPayment(payment)
      const nowMs = yield* Clock.currentTimeMillis
      const unread: NonceRead = { consumed: false, latestLedger: null }
      if (signed === null || nowMs < (yield* Ref.get(ledgerDownUntil))) return Effect.succeed(unread)
      const fiber = yield* Effect.fork(
        ledger.nonceAt(signed.payer, BigInt(signed.nonce)).pipe(
          Effect.timeout(Duration.millis(ledgerReserveMs)),
          Effect.catchAll(() => Effect.as(Ref.set(ledgerDownUntil, nowMs + config.ledger.pollIntervalSeconds * 1000), unread))
        )
      )
      return Fiber.join<NonceRead, never>(fiber)
    })

  return { read: readPayment, judge, nonceCheck } satisfies PaymentChecksShape
})
