import { Either, ParseResult, Schema } from "effect"
import { BadRequest, Unprocessable } from "../domain/errors.js"
import { AgentPolicy } from "../domain/policy.js"
import { BaseUnits, PaymentScheme, StellarAddress, StellarNetwork } from "../domain/stellar.js"
import type { SettleTerms } from "./rules.js"

/**
 * The parts of a settle body the pipeline judges. `amountUsd` is optional: a stock x402 resource
 * server sends no proprietary field, and `amount` in the configured asset already says the price.
 * `servicePolicy` is the buyer's AgentPolicy for this request (SPEC names `maxPricePerRequestUsd`;
 * the other AgentPolicy fields are honoured too).
 */
const SettleShape = Schema.Struct({
  paymentPayload: Schema.Struct({
    payload: Schema.Struct({ transaction: Schema.String.pipe(Schema.minLength(1)) })
  }),
  paymentRequirements: Schema.Struct({
    scheme: Schema.String,
    network: Schema.String,
    asset: Schema.String,
    payTo: StellarAddress,
    amount: BaseUnits,
    maxAmount: Schema.optional(BaseUnits),
    amountUsd: Schema.optional(Schema.Number.pipe(Schema.finite(), Schema.nonNegative())),
    servicePolicy: Schema.optional(AgentPolicy)
  })
})

const decodeShape = Schema.decodeUnknownEither(SettleShape, { errors: "all" })
const isNetwork = Schema.is(StellarNetwork)
const isScheme = Schema.is(PaymentScheme)

const describe = (error: ParseResult.ParseError) =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `${issue.path.join(".") || "(root)"}: ${issue.message}`)
    .join("; ")

export interface ReadRequest {
  readonly terms: SettleTerms
  readonly transactionXdr: string
}

/**
 * Step one of the pipeline: the body's shape (400 naming every bad field), then whether this
 * service can value and forward the payment at all (422): a Stellar network and scheme, paid in
 * the configured asset, the only one whose USD value it knows.
 */
export const readSettleRequest = (body: unknown, asset: string): Either.Either<ReadRequest, BadRequest | Unprocessable> =>
  Either.gen(function* () {
    const shape = yield* Either.mapLeft(decodeShape(body), (e) => new BadRequest({ error: "BAD_REQUEST", message: describe(e) }))
    const r = shape.paymentRequirements
    if (!isNetwork(r.network) || !isScheme(r.scheme)) {
      return yield* Either.left(
        new Unprocessable({
          error: "UNSUPPORTED_PAYMENT_KIND",
          message: `this service settles the exact and upto schemes on stellar:testnet and stellar:pubnet, not "${r.scheme}" on "${r.network}"`
        })
      )
    }
    if (r.asset !== asset) {
      return yield* Either.left(
        new Unprocessable({
          error: "UNSUPPORTED_ASSET",
          message: `this service values and settles payments in ${asset} only, not ${r.asset}`
        })
      )
    }
    return {
      transactionXdr: shape.paymentPayload.payload.transaction,
      terms: {
        network: r.network,
        scheme: r.scheme,
        asset: r.asset,
        payTo: r.payTo,
        amount: r.amount,
        maxAmount: r.maxAmount,
        amountUsd: r.amountUsd,
        policy: r.servicePolicy ?? {}
      }
    }
  })
