import { Either, Schema } from "effect"
import { describeParseError } from "../domain/issues.js"
import { BadRequest, Unprocessable } from "../domain/errors.js"
import { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import { SettleRequest } from "../domain/x402.js"
import type { SettleTerms } from "./rules.js"

/** The HTTP layer decodes the same schema; direct callers (and tests) get the same answer here. */
const decodeRequest = Schema.decodeUnknownEither(SettleRequest, { errors: "all" })
const isNetwork = Schema.is(StellarNetwork)
const isScheme = Schema.is(PaymentScheme)

export interface ReadRequest {
  readonly request: SettleRequest
  readonly terms: SettleTerms
  readonly transactionXdr: string
}

/**
 * Step one of the pipeline: the body's shape (400 naming every bad field, an unknown servicePolicy
 * field included), then whether this service can value and forward the payment at all (422): a
 * Stellar network and scheme, paid in the configured asset, the only one whose USD value it knows.
 */
export const readSettleRequest = (body: unknown, asset: string): Either.Either<ReadRequest, BadRequest | Unprocessable> =>
  Either.gen(function* () {
    const request = yield* Either.mapLeft(decodeRequest(body), (e) => new BadRequest({ error: "BAD_REQUEST", message: describeParseError(e) }))
    const r = request.paymentRequirements
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
      request,
      transactionXdr: request.paymentPayload.payload.transaction,
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
