import { createHash } from "node:crypto"
import { scValToNative, xdr } from "@stellar/stellar-sdk"
import { Either } from "effect"
import {
  DelegatedCredentialsRefused,
  InvalidPayerSignature,
  MalformedPaymentTransaction,
  SourceAccountCredentialsRefused
} from "../domain/errors.js"
import { PaymentId } from "../domain/ids.js"
import { networkPassphrase, type StellarNetwork } from "../domain/stellar.js"
import { addressAuthorization, refusedForm, scAddressString, scValAddress } from "./authEntries.js"
import { payerSignature } from "./payerSignature.js"

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
    return scValAddress(value)
  } catch {
    return null
  }
}

const i128 = (value: xdr.ScVal): bigint | null => {
  if (value.type !== "scvI128") return null
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
  readonly paymentId: PaymentId
  readonly transfer: Transfer
  /**
   * The payer's Soroban authorisation of the transfer: its nonce and the last ledger it is valid
   * in. The reconciler reads the ledger for them when a settle's outcome is unknown. Null when the
   * transaction carries no address-credential entry for the payer (it could not settle anyway).
   */
  readonly authorization: PayerAuthorization | null
  /**
   * The payer's own key signed the authorisation of this transfer, verified here (an account
   * payer): `from` is who signed, not only what the request says. False for a contract payer,
   * whose check only the ledger can run, and for an entry signed only by other keys: such a
   * payment carries no payer identity (open mode keys it on the shared unverified principal, and
   * it is no distinct payer's evidence).
   */
  readonly payerVerified: boolean
}

export interface PayerAuthorization {
  /** The nonce, as a decimal string (an int64). */
  readonly nonce: string
  readonly expirationLedger: number
}

export type DecodeRefusal =
  | MalformedPaymentTransaction
  | DelegatedCredentialsRefused
  | SourceAccountCredentialsRefused
  | InvalidPayerSignature

/**
 * The entry that authorises this transfer: address credentials (`ADDRESS` or `ADDRESS_V2` alike)
 * of the payer whose root invocation is the very `transfer(from, to, amount)` call the transaction
 * makes on this asset contract. Another entry of the payer's (authorising something else) says
 * nothing about this payment, so neither its nonce nor its signature is taken for it.
 */
const payerEntry = (
  auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>,
  payer: string,
  call: xdr.InvokeContractArgs
) => {
  const expected = call.toXdr("base64")
  return auth.find((entry) => {
    const root = entry.rootInvocation.function
    return (
      addressAuthorization(entry)?.address === payer &&
      root.type === "sorobanAuthorizedFunctionTypeContractFn" &&
      root.contractFn.toXdr("base64") === expected
    )
  })
}

const refusal = (form: "addressWithDelegates" | "sourceAccount"): DecodeRefusal =>
  form === "addressWithDelegates"
    ? new DelegatedCredentialsRefused({
        message:
          "the payment's Soroban authorisation uses delegated credentials (SOROBAN_CREDENTIALS_ADDRESS_WITH_DELEGATES); " +
          "only ADDRESS and ADDRESS_V2 credentials are settled, as the x402 reference facilitator settles them"
      })
    : new SourceAccountCredentialsRefused({
        message:
          "the payment's Soroban authorisation uses source-account credentials (SOROBAN_CREDENTIALS_SOURCE_ACCOUNT); " +
          "only ADDRESS and ADDRESS_V2 credentials are settled, as the x402 reference facilitator settles them"
      })

const sha256 = (...parts: ReadonlyArray<Uint8Array>) => {
  const digest = createHash("sha256")
  for (const part of parts) digest.update(part)
  return digest.digest()
}

const ENVELOPE_TYPE_TX = new Uint8Array([0, 0, 0, 2])
const networkIds = new Map<StellarNetwork, Uint8Array>()
const networkId = (network: StellarNetwork) => {
  const known = networkIds.get(network)
  if (known !== undefined) return known
  const id = sha256(new TextEncoder().encode(networkPassphrase(network)))
  networkIds.set(network, id)
  return id
}

/**
 * The network's hash of a v1 transaction: sha256(network id, ENVELOPE_TYPE_TX, the transaction's
 * XDR). The transaction's bytes are taken from the envelope as received (between its 4-byte type
 * and its signatures) rather than re-encoded: stellar-sdk 17's `Transaction.hash()` re-serialises
 * the whole transaction, about a millisecond a settle.
 */
const v1TransactionHash = (envelopeBytes: Uint8Array, envelope: xdr.TransactionV1Envelope, network: StellarNetwork) => {
  const signatures = xdr.encodeArray(xdr.DecoratedSignature, envelope.signatures)
  return sha256(
    networkId(network),
    ENVELOPE_TYPE_TX,
    envelopeBytes.subarray(4, envelopeBytes.length - signatures.length)
  ).toString("hex")
}

/**
 * Reads the transfer out of a Stellar `exact` payload's transaction (base64 envelope XDR) without
 * trusting anything else the request says. The shape is the one the x402 Stellar scheme builds and
 * its facilitators accept: one InvokeHostFunction operation calling `transfer` with three
 * arguments, authorised by address credentials (`ADDRESS` or `ADDRESS_V2`).
 */
export const decodePayment = (
  transactionXdr: string,
  network: StellarNetwork
): Either.Either<DecodedPayment, DecodeRefusal> => {
  let bytes: Uint8Array
  let envelope: xdr.TransactionEnvelope
  try {
    bytes = Buffer.from(transactionXdr, "base64")
    envelope = xdr.TransactionEnvelope.fromXdr(bytes)
  } catch {
    return Either.left(
      malformed("paymentPayload.payload.transaction is not a Stellar transaction envelope (base64 XDR)")
    )
  }
  if (envelope.type !== "envelopeTypeTx") {
    return Either.left(
      malformed(
        "paymentPayload.payload.transaction must be a v1 transaction envelope, as x402 Stellar wallets build it"
      )
    )
  }
  const [operation, ...rest] = envelope.v1.tx.operations
  if (operation === undefined || rest.length > 0 || operation.body.type !== "invokeHostFunction") {
    return Either.left(malformed("the payment transaction must hold exactly one InvokeHostFunction operation"))
  }
  const { hostFunction: fn, auth } = operation.body.invokeHostFunctionOp
  if (fn.type !== "hostFunctionTypeInvokeContract") {
    return Either.left(malformed("the payment transaction must invoke a contract function"))
  }
  const call = fn.invokeContract
  const name = call.functionName.toString()
  const args = call.args
  if (name !== "transfer" || args.length !== 3) {
    return Either.left(
      malformed(
        `the payment transaction must call transfer(from, to, amount), not ${name} with ${args.length} arguments`
      )
    )
  }
  const refused = refusedForm(auth)
  if (refused !== null) return Either.left(refusal(refused))
  const [fromArg, toArg, amountArg] = args as [xdr.ScVal, xdr.ScVal, xdr.ScVal]
  const from = address(fromArg)
  const to = address(toArg)
  const amount = i128(amountArg)
  if (from === null || to === null || amount === null) {
    return Either.left(malformed("the transfer's arguments must be two addresses and an i128 amount"))
  }
  const entry = payerEntry(auth, from, call)
  const signed = entry === undefined ? null : addressAuthorization(entry)
  const signature = entry === undefined ? "unproven" : payerSignature(entry, from, networkPassphrase(network))
  if (signature === "invalid") {
    return Either.left(
      new InvalidPayerSignature({
        message: `the signature of payer ${from} on its Soroban authorisation does not verify for ${network}`
      })
    )
  }
  return Either.right({
    paymentId: PaymentId.make(v1TransactionHash(bytes, envelope.v1, network)),
    transfer: { asset: scAddressString(call.contractAddress), from, to, amount },
    authorization:
      signed === null ? null : { nonce: signed.nonce.toString(), expirationLedger: signed.expirationLedger },
    payerVerified: signature === "payer"
  })
}
