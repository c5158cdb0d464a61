import { Account, Operation, type Transaction, TransactionBuilder } from "@stellar/stellar-sdk"
import { Either, Schema } from "effect"
import { Reason, type Refusal, refuse } from "./reasons.js"
import type { CheckedPayment, ExactTerms } from "./verifyRules.js"

/** The fields of a stock verify/settle body the embedded facilitator reads; the rest is ignored. */
const Body = Schema.Struct({
  x402Version: Schema.Number,
  paymentPayload: Schema.Struct({
    x402Version: Schema.Number,
    accepted: Schema.Struct({ scheme: Schema.String, network: Schema.String }),
    payload: Schema.Struct({ transaction: Schema.String })
  }),
  paymentRequirements: Schema.Struct({
    scheme: Schema.String,
    network: Schema.String,
    asset: Schema.String,
    payTo: Schema.String,
    amount: Schema.String.pipe(Schema.pattern(/^\d{1,38}$/)),
    maxTimeoutSeconds: Schema.optionalWith(Schema.Number.pipe(Schema.positive(), Schema.finite()), {
      default: () => 60
    })
  })
})
const decodeBody = Schema.decodeUnknownEither(Body)

/** A stock body read and checked against the protocol: what to judge, on which terms. */
export interface PaymentRequest {
  readonly transaction: string
  readonly network: string
  readonly terms: ExactTerms
  readonly maxTimeoutSeconds: number
}

/** The scheme's "Protocol Validation" (x402 version 2, `exact`, one network) plus this backend's own network. */
export const readRequest = (body: unknown, network: string): Either.Either<PaymentRequest, Refusal> => {
  const decoded = decodeBody(body)
  if (Either.isLeft(decoded))
    return Either.left(refuse(Reason.malformed, "the body is not a stock x402 Stellar exact verify or settle request"))
  const { paymentPayload: payload, paymentRequirements: requirements } = decoded.right
  if (payload.x402Version !== 2)
    return Either.left(refuse(Reason.x402Version, "only x402 version 2 payments are settled"))
  if (payload.accepted.scheme !== "exact" || requirements.scheme !== "exact")
    return Either.left(refuse(Reason.unsupportedScheme, "only the exact scheme is settled"))
  if (payload.accepted.network !== requirements.network)
    return Either.left(
      refuse(Reason.networkMismatch, "the payment was made for another network than the requirements name")
    )
  if (requirements.network !== network)
    return Either.left(refuse(Reason.invalidNetwork, `this facilitator settles on ${network} only`))
  return Either.right({
    transaction: payload.payload.transaction,
    network: requirements.network,
    terms: { asset: requirements.asset, payTo: requirements.payTo, amount: BigInt(requirements.amount) },
    maxTimeoutSeconds: requirements.maxTimeoutSeconds
  })
}

/**
 * The payer's invocation rebuilt around its signed authorisation, from `source` at `sequence`
 * (the transaction takes sequence + 1): the only operation, nothing the payer's envelope said
 * about source, fee, memo or preconditions is kept.
 */
export const rebuild = (
  payment: CheckedPayment,
  source: string,
  sequence: bigint,
  inclusionFee: number,
  timeoutSeconds: number,
  passphrase: string
): Transaction =>
  new TransactionBuilder(new Account(source, sequence.toString()), {
    fee: String(inclusionFee),
    networkPassphrase: passphrase
  })
    .addOperation(Operation.invokeHostFunction({ func: payment.func, auth: [...payment.auth] }))
    .setTimeout(Math.ceil(timeoutSeconds))
    .build()
