import { Address, scValToNative, Transaction, xdr } from "@stellar/stellar-sdk"
import { getNetworkPassphrase } from "@x402/stellar"
import { Either } from "effect"
import { MalformedPaymentTransaction } from "../domain/errors.js"
import type { StellarNetwork } from "../domain/stellar.js"

/** The SEP-41 `transfer(from, to, amount)` a Stellar `exact` payload would execute. */
export interface Transfer {
  /** The token contract invoked: the asset actually paid. */
  readonly asset: string
  readonly from: string
  readonly to: string
  readonly amount: bigint
}

const malformed = (message: string) => new MalformedPaymentTransaction({ message })

const address = (value: xdr.ScVal): string | null => {
  try {
    return Address.fromScVal(value).toString()
  } catch {
    return null
  }
}

const i128 = (value: xdr.ScVal): bigint | null => {
  if (value.switch() !== xdr.ScValType.scvI128()) return null
  const native: unknown = scValToNative(value)
  return typeof native === "bigint" ? native : null
}

/** A Stellar `exact` payment as this service identifies and judges it. */
export interface DecodedPayment {
  /**
   * The signed transaction's hash for the network (hex): what identifies the payment. It is
   * computed from the decoded transaction, so every wrapper of one signed transaction (another
   * `resource`, added `extensions`, whitespace or line breaks in the base64) is the same payment.
   */
  readonly paymentId: string
  readonly transfer: Transfer
  /**
   * The payer's Soroban authorisation of the transfer: its nonce and the last ledger it is valid
   * in. The reconciler reads the ledger for them when a settle's outcome is unknown. Null when the
   * transaction carries no address-credential entry for the payer (it could not settle anyway).
   */
  readonly authorization: PayerAuthorization | null
}

export interface PayerAuthorization {
  /** The nonce, as a decimal string (an int64). */
  readonly nonce: string
  readonly expirationLedger: number
}

/** The address-credential auth entry signed by `payer`, if the operation carries one. */
const payerAuthorization = (auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>, payer: string): PayerAuthorization | null => {
  for (const entry of auth) {
    const credentials = entry.credentials()
    if (credentials.switch() !== xdr.SorobanCredentialsType.sorobanCredentialsAddress()) continue
    const signed = credentials.address()
    if (Address.fromScAddress(signed.address()).toString() !== payer) continue
    return { nonce: signed.nonce().toString(), expirationLedger: signed.signatureExpirationLedger() }
  }
  return null
}

/**
 * Reads the transfer out of a Stellar `exact` payload's transaction (base64 envelope XDR) without
 * trusting anything else the request says. The shape is the one the x402 Stellar scheme builds and
 * its facilitators accept: one InvokeHostFunction operation calling `transfer` with three arguments.
 */
export const decodePayment = (transactionXdr: string, network: StellarNetwork): Either.Either<DecodedPayment, MalformedPaymentTransaction> => {
  let transaction: Transaction
  try {
    transaction = new Transaction(transactionXdr, getNetworkPassphrase(network))
  } catch {
    return Either.left(malformed("paymentPayload.payload.transaction is not a Stellar transaction envelope (base64 XDR)"))
  }
  const [operation, ...rest] = transaction.operations
  if (operation === undefined || rest.length > 0 || operation.type !== "invokeHostFunction") {
    return Either.left(malformed("the payment transaction must hold exactly one InvokeHostFunction operation"))
  }
  const fn = operation.func
  if (fn.switch() !== xdr.HostFunctionType.hostFunctionTypeInvokeContract()) {
    return Either.left(malformed("the payment transaction must invoke a contract function"))
  }
  const call = fn.invokeContract()
  const name = call.functionName().toString()
  const args = call.args()
  if (name !== "transfer" || args.length !== 3) {
    return Either.left(malformed(`the payment transaction must call transfer(from, to, amount), not ${name} with ${args.length} arguments`))
  }
  const [fromArg, toArg, amountArg] = args as [xdr.ScVal, xdr.ScVal, xdr.ScVal]
  const from = address(fromArg)
  const to = address(toArg)
  const amount = i128(amountArg)
  if (from === null || to === null || amount === null) {
    return Either.left(malformed("the transfer's arguments must be two addresses and an i128 amount"))
  }
  return Either.right({
    paymentId: transaction.hash().toString("hex"),
    transfer: { asset: Address.fromScAddress(call.contractAddress()).toString(), from, to, amount },
    authorization: payerAuthorization(operation.auth ?? [], from)
  })
}
