import { StrKey } from "@stellar/stellar-sdk"
import { Either, Schema } from "effect"
import { StellarNetwork } from "../domain/stellar.js"
import type { RefusalContext } from "../domain/x402Refusals.js"
import { decodePayment } from "../ledger/transfer.js"

const isNetwork = Schema.is(StellarNetwork)

const fieldsOf = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

/**
 * The network and payer a refusal of verify or settle names, read from the request body as sent
 * (it may be one that failed its schema). The payer is named only when the signed transfer decodes
 * and, for an account, its signature verifies, so a refusal never names a payer the request only
 * claims. Read on the refusal path only: a settle that goes through has read it already.
 */
export const refusalContextOf = (body: unknown): RefusalContext => {
  const requirements = fieldsOf(fieldsOf(body).paymentRequirements)
  const network = typeof requirements.network === "string" ? requirements.network : ""
  const transaction = fieldsOf(fieldsOf(fieldsOf(body).paymentPayload).payload).transaction
  const decoded =
    typeof transaction === "string" && isNetwork(network) ? decodePayment(transaction, network) : undefined
  // An account payer whose entry only other keys signed is not named: the request only claims it.
  const proven =
    decoded !== undefined &&
    Either.isRight(decoded) &&
    (decoded.right.payerVerified || !StrKey.isValidEd25519PublicKey(decoded.right.transfer.from))
  return { network, payer: proven ? decoded.right.transfer.from : undefined }
}

/** The x402 operation a request path answers, when it is one whose refusals are x402 bodies. */
export const x402OperationOf = (method: string, path: string) =>
  method !== "POST"
    ? undefined
    : path === "/x402/verify"
      ? ("verify" as const)
      : path === "/x402/settle"
        ? ("settle" as const)
        : undefined
