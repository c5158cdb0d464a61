import type { Keypair } from "@stellar/stellar-sdk"
import { x402Client, x402HTTPClient } from "@x402/core/client"
import type { PaymentRequiredV2 } from "@x402/core/schemas"
import type { PaymentRequirements } from "@x402/core/types"
import { Duration, Effect, Option, Schema } from "effect"
import { SellerReceipt } from "../domain/receipts.js"
import type { HttpMethod } from "../domain/resources.js"
import { SettleResponse } from "../domain/x402.js"
import { receiptInAnswer } from "../extensions/offerReceipt.js"
import { withPaymentIdentifier } from "../extensions/paymentIdentifier.js"
import { Dialer, dialPinned, Resolver, readUpTo } from "../outbound/Connector.js"
import { fetchAnswer, type OutboundRequests, resourceRequest, Unreachable } from "../outbound/fetchAnswer.js"
import { type DnsFailure, type OutboundTargetRefused, type Vetted, vetTarget } from "../outbound/outboundGuard.js"
import { type ChallengeReading, type Deployment, readChallenge } from "../x402/challenge.js"
import {
  type Authorization,
  type BuildPaymentError,
  ChallengeUnreadable,
  NoAcceptableOption,
  NoPaymentRequired,
  PaymentOutcomeUnknown,
  PriceAboveLimit
} from "./errors.js"
import { buildExactPayment, refusalOf } from "./exactPayment.js"
import { unknownOutcomeOf } from "./paidOutcome.js"

/** What a payment may be: who signs, where it is simulated, and what the caller accepts. */
export interface PaymentTerms {
  /** The payer's key: the operator's probe key, or a buyer's own on the buyer's machine. */
  readonly signer: Keypair
  readonly rpcUrl: string
  /** The inclusion fee bid on the payment's transaction (stroops); the resource fee comes from simulation. */
  readonly inclusionFeeStroops: number
  /** The only network and asset contract paid in. */
  readonly deployment: Deployment
  /** Base units: an option asking more is never paid. */
  readonly maxPrice: bigint
  /**
   * The caller's further say on an option (a payee, a policy): why it is refused, or null. Every
   * payable option is accepted by default. The reason is quoted in NoAcceptableOption.
   */
  readonly refuse?: (requirements: PaymentRequirements) => string | null
}

export interface PayForInput extends PaymentTerms {
  readonly url: string
  readonly method: HttpMethod
  /**
   * JSON text sent as the body of both requests when `method` takes one (`{}` by default); a GET's
   * input belongs in `url`'s query string.
   */
  readonly body?: string
  /** The outbound guard's policy, the unpaid request's timeout and the body cap (the probes' or the buyer's). */
  readonly outbound: OutboundRequests
  /** Bound on the paid request, which waits for the facilitator to settle (default 60 s). */
  readonly paidTimeoutMs?: number
}

export type SettleAnswer = typeof SettleResponse.Type

export interface PaidAnswer {
  /** Where the payment was sent: the URL that answered 402 (after redirects). */
  readonly url: string
  /** The paid request's HTTP status. */
  readonly status: number
  /** The decoded `PAYMENT-RESPONSE` (settle response: success, transaction, payer, network), null when absent or malformed. */
  readonly paymentResponse: SettleAnswer | null
  /** The seller's signed JWS receipt in the `PAYMENT-RESPONSE` (`offer-receipt` extension), null when it sent none. */
  readonly sellerReceipt: SellerReceipt | null
  /** The option paid, as the challenge stated it. */
  readonly requirements: PaymentRequirements
  /** Base units the signed transfer moves; money left the payer only if `paymentResponse.success`. */
  readonly amount: string
  /** How the payment is recognised on the ledger (payer, nonce, expiration ledger). */
  readonly authorization: Authorization
  /** From sending the paid request to its last body byte: settlement included. */
  readonly latencyMs: number
  readonly contentType: string | null
  /** The body is JSON and declared so (`application/json`, `+json`); null when over the cap or unreadable. */
  readonly bodyIsJson: boolean | null
  /** The paid answer's body; null when over `outbound.maxBodyBytes`. */
  readonly body: Buffer | null
  /** An MCP tool result that is an error: not delivered whatever the HTTP status. */
  readonly toolError?: boolean
  /** The payment identifier the payment carried, when the seller offered the extension. */
  readonly paymentIdentifier?: string | null
  /** How many times the same signed payment was sent (more than once only with a payment identifier). */
  readonly sends?: number
}

export type PayForError =
  | OutboundTargetRefused
  | Unreachable
  | NoPaymentRequired
  | ChallengeUnreadable
  | NoAcceptableOption
  | PriceAboveLimit
  | BuildPaymentError
  | PaymentOutcomeUnknown

const DEFAULT_PAID_TIMEOUT_MS = 60_000

// Encodes PAYMENT-SIGNATURE and decodes PAYMENT-RESPONSE as x402 clients do; it needs no scheme
// registration, since this module builds the payment itself.
const x402 = new x402HTTPClient(new x402Client())

/**
 * The longest validity this buyer signs an authorisation for. A challenge's `maxTimeoutSeconds`
 * sets how long the signed payment may be submitted; a seller asking for days (or 1e9 s) would hold
 * a payment it can settle whenever it likes. 600 s covers every facilitator's settle (a ledger
 * closes about every 5 s).
 */
export const MAX_TIMEOUT_SECONDS = 600

const timeoutRefusal = (offered: { readonly maxTimeoutSeconds?: unknown }): string | null =>
  typeof offered.maxTimeoutSeconds === "number" && offered.maxTimeoutSeconds > MAX_TIMEOUT_SECONDS
    ? `maxTimeoutSeconds ${offered.maxTimeoutSeconds} is above the ${MAX_TIMEOUT_SECONDS} s this buyer signs for`
    : null

const describeOption = (r: PaymentRequirements) => `${r.scheme} ${r.amount} of ${r.asset} on ${r.network} to ${r.payTo}`

/** The cheapest option that is payable, accepted by the caller and within `maxPrice`. */
const choose = (challenge: PaymentRequiredV2, input: PaymentTerms) => {
  const judged = challenge.accepts.map((offered) => {
    const refusal = refusalOf(offered, input.deployment)?.reason ?? null
    // Past refusalOf the network is the deployment's and `extra` an object: the stock type holds.
    const option = offered as PaymentRequirements
    return { option, refusal: refusal ?? timeoutRefusal(offered) ?? input.refuse?.(option) ?? null }
  })
  const payable = judged.filter((j) => j.refusal === null).map((j) => j.option)
  if (payable.length === 0) {
    return new NoAcceptableOption({
      offered:
        judged.length === 0 ? "no options" : judged.map((j) => `${describeOption(j.option)} (${j.refusal})`).join("; ")
    })
  }
  const [cheapest] = [...payable].sort((a, b) =>
    BigInt(a.amount) < BigInt(b.amount) ? -1 : BigInt(a.amount) > BigInt(b.amount) ? 1 : 0
  )
  if (cheapest === undefined || BigInt(cheapest.amount) > input.maxPrice) {
    return new PriceAboveLimit({ cheapest: cheapest?.amount ?? "", maxPrice: input.maxPrice.toString() })
  }
  return cheapest
}

/** `application/json` or a `+json` type: what a body declared as JSON says. */
export const isJsonType = (contentType: string | null) =>
  contentType !== null && /^application\/([a-z0-9.+-]*\+)?json\s*(;|$)/i.test(contentType.trim())

export const judgeBody = (contentType: string | null, body: Buffer | null): boolean | null => {
  if (body === null) return null
  if (!isJsonType(contentType)) return false
  try {
    JSON.parse(body.toString("utf8"))
    return true
  } catch {
    return false
  }
}

/**
 * Steps 2 to 4 of a purchase, whatever carried the challenge (a 402, an MCP tool result): the
 * decoded challenge, the cheapest option this wallet pays that the caller accepts (nothing is
 * signed when none is, or when it costs more than `maxPrice`), signed through Soroban RPC.
 */
export const signChosen = (reading: ChallengeReading, input: PaymentTerms) =>
  Effect.gen(function* () {
    if (reading._tag === "NoChallenge")
      return yield* new ChallengeUnreadable({ reason: "a 402 without an x402 challenge" })
    if (reading._tag === "Malformed") return yield* new ChallengeUnreadable({ reason: reading.reason })
    if (reading.challenge.x402Version !== 2) {
      return yield* new NoAcceptableOption({
        offered: "an x402 v1 challenge: the Stellar exact scheme is paid in x402 v2 only"
      })
    }
    const requirements = choose(reading.challenge, input)
    if (!("payTo" in requirements)) return yield* requirements
    const signed = yield* buildExactPayment({
      requirements,
      resource: reading.challenge.resource,
      signer: input.signer,
      rpcUrl: input.rpcUrl,
      inclusionFeeStroops: input.inclusionFeeStroops,
      deployment: input.deployment
    })
    // The identifier rides beside the signed transaction, which it does not change.
    const identified = withPaymentIdentifier(
      reading.challenge.extensions ?? undefined,
      signed.paymentPayload.extensions
    )
    const paymentPayload =
      identified === null ? signed.paymentPayload : { ...signed.paymentPayload, extensions: identified.extensions }
    return { requirements, ...signed, paymentPayload, paymentIdentifier: identified?.id ?? null }
  })

/**
 * Sends the signed payment once, to the address the guard just vetted and without following
 * redirects (a payment is for the URL that asked for it). Anything that goes wrong after the
 * request left is PaymentOutcomeUnknown: the facilitator may have settled.
 */
const sendPaid = (
  target: Vetted,
  input: PayForInput,
  paymentHeaders: Record<string, string>,
  authorization: Authorization
) =>
  Effect.gen(function* () {
    const dial = yield* Dialer
    const timeout = Duration.millis(input.paidTimeoutMs ?? DEFAULT_PAID_TIMEOUT_MS)
    const exchange = Effect.tryPromise({
      try: async (signal) => {
        const response = await dialPinned(dial, target, {
          ...resourceRequest(input.method, input.body, paymentHeaders),
          signal
        })
        return { response, body: await readUpTo(response, input.outbound.maxBodyBytes) }
      },
      catch: (e) => (e instanceof Error ? e : new Error(String(e)))
    })
    const [elapsed, { response, body }] = yield* exchange.pipe(
      Effect.timed,
      Effect.timeoutFail({ duration: timeout, onTimeout: () => `no answer within ${Duration.format(timeout)}` }),
      Effect.mapError(
        (e) => new PaymentOutcomeUnknown({ reason: typeof e === "string" ? e : e.message, authorization })
      )
    )
    const header = (name: string) => response.headers.get(name) ?? undefined
    const contentType = header("content-type") ?? null
    const paymentResponse = Option.getOrNull(
      Option.liftThrowable(() => x402.getPaymentSettleResponse(header))().pipe(
        Option.flatMap(Schema.decodeUnknownOption(SettleResponse))
      )
    )
    return {
      status: response.status,
      paymentResponse,
      challenged: header("PAYMENT-REQUIRED") !== undefined,
      sellerReceipt: sellerReceiptOf(paymentResponse),
      latencyMs: Duration.toMillis(elapsed),
      contentType,
      bodyIsJson: judgeBody(contentType, body),
      body
    }
  })

/** Pauses before each resend of a payment whose outcome is unknown: at most two resends. */
export const RESEND_DELAYS_MS: ReadonlyArray<number> = [500, 2_000]

/**
 * Sends a payment; while its outcome is unknown (`send` fails, or `unknownIn` finds the answer
 * leaves it open, a resend's refusal included: see `unknownOutcomeOf`), sends the same signed payment with the same identifier
 * again, up to RESEND_DELAYS_MS.length times, when it carries a payment identifier: the seller's
 * facilitator recognises the identifier and answers the first settlement instead of making a second.
 * Without an identifier it is sent once, as a resend could be a second payment. An outcome still
 * unknown after the last send is PaymentOutcomeUnknown, never an answer a caller could take for a
 * refusal and pay another seller after. HTTP (`payFor`) and MCP tools (`payForTool`) resend by this
 * one rule.
 */
export const sendWithResends = <A, E extends { readonly reason: string }, R>(
  send: Effect.Effect<A, E, R>,
  unknownIn: (answer: A, resent: boolean) => string | null,
  authorization: Authorization,
  paymentIdentifier: string | null
): Effect.Effect<A & { readonly sends: number }, PaymentOutcomeUnknown, R> =>
  Effect.gen(function* () {
    const resends = paymentIdentifier === null ? 0 : RESEND_DELAYS_MS.length
    let sends = 0
    for (;;) {
      sends++
      const result = yield* Effect.either(send)
      const unknown = result._tag === "Left" ? result.left.reason : unknownIn(result.right, sends > 1)
      if (unknown === null && result._tag === "Right") return { ...result.right, sends }
      if (sends > resends) {
        const reason =
          paymentIdentifier === null
            ? unknown!
            : `${unknown}; sent ${sends} times with payment identifier ${paymentIdentifier}`
        return yield* new PaymentOutcomeUnknown({
          reason,
          authorization,
          ...(paymentIdentifier === null ? {} : { paymentIdentifier })
        })
      }
      yield* Effect.sleep(Duration.millis(RESEND_DELAYS_MS[sends - 1]!))
    }
  })

/** The seller's signed receipt (offer-receipt extension) in a settlement answer, HTTP or MCP alike. */
export const sellerReceiptOf = (paymentResponse: Readonly<Record<string, unknown>> | null): SellerReceipt | null =>
  Option.getOrNull(Schema.decodeUnknownOption(SellerReceipt)(receiptInAnswer(paymentResponse)))

/**
 * Pays for one request as an x402 buyer does:
 *
 * 1. request `url` (outbound guard, redirects, `outbound.timeoutMs`: the probes' `fetchAnswer`) and
 *    expect 402;
 * 2. read the challenge (`PAYMENT-REQUIRED` for v2, the body for v1) with @x402/core;
 * 3. choose the cheapest option this wallet pays that the caller accepts; nothing is signed or sent
 *    when none is, or when it costs more than `maxPrice`;
 * 4. build and sign the Stellar `exact` payment through Soroban RPC (`buildExactPayment`);
 * 5. send the request again to the URL that asked, with `PAYMENT-SIGNATURE`: once, or, when the
 *    seller offers the `payment-identifier` extension, again with the same signed payment and
 *    identifier while its outcome is unknown (`sendPayment`);
 * 6. answer the status, the decoded `PAYMENT-RESPONSE`, the option paid, the latency of the paid
 *    request, its body and whether that is the JSON it declares.
 */
export const payFor = (input: PayForInput): Effect.Effect<PaidAnswer, PayForError> =>
  Effect.gen(function* () {
    const answer = yield* fetchAnswer(input.url, input.method, input.outbound, input.body).pipe(
      Effect.catchTag("AnswerTimeout", (timeout) => new Unreachable({ reason: timeout.reason }))
    )
    if (answer.httpStatus !== 402) return yield* new NoPaymentRequired({ httpStatus: answer.httpStatus })
    const { requirements, paymentPayload, authorization, paymentIdentifier } = yield* signChosen(
      readChallenge(answer.header, answer.body),
      input
    )
    const resolve = yield* Resolver
    const target = yield* vetTarget(answer.url, input.outbound, resolve).pipe(
      Effect.catchTag(
        "DnsFailure",
        (e: DnsFailure) => new Unreachable({ reason: `cannot resolve ${e.host}: ${e.reason}` })
      )
    )
    const send = sendPaid(target, input, x402.encodePaymentSignatureHeader(paymentPayload), authorization)
    const paid = yield* sendWithResends(send, unknownOutcomeOf, authorization, paymentIdentifier)
    return {
      url: target.url.href,
      requirements,
      amount: requirements.amount,
      authorization,
      paymentIdentifier,
      ...paid
    }
  })
