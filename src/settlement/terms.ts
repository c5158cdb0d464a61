import { Either, Schema } from "effect"
import { UnsupportedAsset, UnsupportedPaymentKind } from "../domain/errors.js"
import { PaymentScheme, StellarNetwork } from "../domain/stellar.js"
import type { SettleRequest } from "../domain/x402.js"
import type { SettleTerms } from "./rules.js"

const isNetwork = Schema.is(StellarNetwork)
const isScheme = Schema.is(PaymentScheme)

/**
 * Whether this service can value and forward the payment at all (422): a Stellar network and
 * scheme, paid in the configured asset, the only one whose USD value it knows. The body's shape
 * was checked when it was decoded.
 */
export const termsOf = (
  request: SettleRequest,
  asset: string
): Either.Either<SettleTerms, UnsupportedPaymentKind | UnsupportedAsset> => {
  const r = request.paymentRequirements
  if (!isNetwork(r.network) || !isScheme(r.scheme)) {
    return Either.left(
      new UnsupportedPaymentKind({
        message: `this service settles the exact and upto schemes on stellar:testnet and stellar:pubnet, not "${r.scheme}" on "${r.network}"`
      })
    )
  }
  if (r.asset !== asset) {
    return Either.left(
      new UnsupportedAsset({ message: `this service values and settles payments in ${asset} only, not ${r.asset}` })
    )
  }
  return Either.right({
    network: r.network,
    scheme: r.scheme,
    asset: r.asset,
    payTo: r.payTo,
    amount: r.amount,
    maxAmount: r.maxAmount,
    amountUsd: r.amountUsd,
    policy: r.servicePolicy ?? {}
  })
}
