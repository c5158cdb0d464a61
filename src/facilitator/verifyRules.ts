import { encodeMuxedAccountToAddress, extractBaseAddress, scValToNative, xdr } from "@stellar/stellar-sdk"
import { Either } from "effect"
import { addressCredentials, credentialForm, scAddressString, scValAddress } from "../ledger/authEntries.js"
import { payerSignature } from "../ledger/payerSignature.js"
import { Reason, type Refusal, refuse } from "./reasons.js"

/** What the payment must be, from the paymentRequirements. */
export interface ExactTerms {
  readonly asset: string
  readonly payTo: string
  readonly amount: bigint
}

/** Where the ledger stands when a payment is judged: its expiration window. */
export interface LedgerWindow {
  readonly currentLedger: number
  /** currentLedger + ceil(maxTimeoutSeconds / the measured seconds per ledger). */
  readonly maxLedger: number
}

/** A payment that passed every check a facilitator can run without the network. */
export interface CheckedPayment {
  readonly payer: string
  readonly func: xdr.HostFunction
  readonly auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>
  /** The payer's authorisation nonce: what makes two submissions of one payment the same payment. */
  readonly nonce: bigint
  readonly expirationLedger: number
}

/**
 * The reference facilitator allows two ledgers past the window, for an RPC a ledger or two behind
 * the client's; judged alike here so a stock client's payment is never refused by one and not the other.
 */
export const EXPIRATION_TOLERANCE_LEDGERS = 2

/** `ceil(maxTimeoutSeconds / ledgerSeconds)` ledgers after the current one: the latest expiration the scheme allows. */
export const expirationWindow = (
  currentLedger: number,
  maxTimeoutSeconds: number,
  ledgerSeconds: number
): LedgerWindow => ({
  currentLedger,
  maxLedger: currentLedger + Math.ceil(maxTimeoutSeconds / ledgerSeconds)
})

const accountOf = (muxed: xdr.MuxedAccount): string => {
  const address = encodeMuxedAccountToAddress(muxed)
  return address.startsWith("M") ? extractBaseAddress(address) : address
}

/** Every address an invocation names: its contract and any address among its arguments, its sub-invocations' too. */
const invocationAddresses = (invocation: xdr.SorobanAuthorizedInvocation): ReadonlyArray<string> => {
  const fn = invocation.function
  const own =
    fn.type === "sorobanAuthorizedFunctionTypeContractFn"
      ? [scAddressString(fn.contractFn.contractAddress), ...fn.contractFn.args.flatMap((a) => scValAddress(a) ?? [])]
      : []
  return [...own, ...invocation.subInvocations.flatMap(invocationAddresses)]
}

const i128 = (value: xdr.ScVal): bigint | null => (value.type === "scvI128" ? (scValToNative(value) as bigint) : null)

/**
 * The `exact` scheme's checks on the payer's transaction (scheme_exact_stellar.md, "Facilitator
 * Verification Rules"), in the reference facilitator's order so each refusal carries its code:
 * one InvokeHostFunction calling the required asset's `transfer(from, payTo, amount)`; no
 * facilitator account as transaction or operation source, payer, or anywhere in an authorisation;
 * only `ADDRESS` / `ADDRESS_V2` credentials (CAP-71's V2 signs the same fields), none with
 * sub-invocations, none expiring past the window or before the current ledger; the payer's entry
 * signed, and its signature verifying for this network. What only the ledger knows (balances,
 * nonces, a contract payer's `__check_auth`) is left to simulation.
 */
export const checkPayment = (
  transactionXdr: string,
  terms: ExactTerms,
  facilitatorAccounts: ReadonlySet<string>,
  window: LedgerWindow,
  passphrase: string
): Either.Either<CheckedPayment, Refusal> => {
  let envelope: xdr.TransactionEnvelope
  try {
    envelope = xdr.TransactionEnvelope.fromXdr(transactionXdr, "base64")
  } catch {
    return Either.left(
      refuse(Reason.malformed, "payload.transaction is not a Stellar transaction envelope (base64 XDR)")
    )
  }
  if (envelope.type !== "envelopeTypeTx")
    return Either.left(refuse(Reason.malformed, "payload.transaction must be a v1 transaction envelope"))
  const tx = envelope.v1.tx
  const [operation, ...rest] = tx.operations
  if (operation === undefined || rest.length > 0 || operation.body.type !== "invokeHostFunction") {
    return Either.left(
      refuse(Reason.wrongOperation, "the transaction must hold exactly one InvokeHostFunction operation")
    )
  }
  const opSource = operation.sourceAccount ? accountOf(operation.sourceAccount) : null
  if (
    facilitatorAccounts.has(accountOf(tx.sourceAccount)) ||
    (opSource !== null && facilitatorAccounts.has(opSource))
  ) {
    return Either.left(
      refuse(Reason.unsafeSource, "the transaction or its operation names one of this facilitator's accounts as source")
    )
  }
  const { hostFunction: func, auth } = operation.body.invokeHostFunctionOp
  if (func.type !== "hostFunctionTypeInvokeContract")
    return Either.left(refuse(Reason.wrongOperation, "the operation must invoke a contract function"))
  const call = func.invokeContract
  if (scAddressString(call.contractAddress) !== terms.asset) {
    return Either.left(
      refuse(
        Reason.wrongAsset,
        `the transfer is of contract ${scAddressString(call.contractAddress)}, not the required asset ${terms.asset}`
      )
    )
  }
  if (call.functionName.toString() !== "transfer" || call.args.length !== 3) {
    return Either.left(refuse(Reason.wrongFunction, "the invocation must be transfer(from, to, amount)"))
  }
  const [fromArg, toArg, amountArg] = call.args as [xdr.ScVal, xdr.ScVal, xdr.ScVal]
  const from = scValAddress(fromArg)
  const to = scValAddress(toArg)
  const amount = i128(amountArg)
  if (from === null || to === null || amount === null)
    return Either.left(refuse(Reason.malformed, "transfer's arguments must be two addresses and an i128"))
  if (facilitatorAccounts.has(from))
    return Either.left(refuse(Reason.facilitatorIsPayer, "the payer is one of this facilitator's own accounts"))
  if (to !== terms.payTo)
    return Either.left(refuse(Reason.wrongRecipient, `the transfer pays ${to}, not the required payTo ${terms.payTo}`))
  if (amount !== terms.amount)
    return Either.left(refuse(Reason.wrongAmount, `the transfer moves ${amount}, not the required ${terms.amount}`))
  return Either.flatMap(checkAuth(auth, from, call, facilitatorAccounts, window, passphrase), (payerEntry) =>
    Either.right({
      payer: from,
      func,
      auth,
      nonce: payerEntry.nonce,
      expirationLedger: payerEntry.signatureExpirationLedger
    })
  )
}

/** The authorisation entries' checks; answers the payer's address credentials. */
const checkAuth = (
  auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>,
  payer: string,
  call: xdr.InvokeContractArgs,
  facilitatorAccounts: ReadonlySet<string>,
  window: LedgerWindow,
  passphrase: string
): Either.Either<xdr.SorobanAddressCredentials, Refusal> => {
  if (auth.length === 0)
    return Either.left(refuse(Reason.noAuthEntries, "the transaction carries no authorisation entries"))
  let payerEntry: xdr.SorobanAuthorizationEntry | null = null
  for (const entry of auth) {
    const credentials = addressCredentials(entry)
    if (credentials === null) {
      return Either.left(
        refuse(
          Reason.unsupportedCredential,
          `${credentialForm(entry.credentials)} credentials are refused: only ADDRESS and ADDRESS_V2 are settled`
        )
      )
    }
    const named = [scAddressString(credentials.address), ...invocationAddresses(entry.rootInvocation)]
    if (named.some((address) => facilitatorAccounts.has(address))) {
      return Either.left(
        refuse(Reason.facilitatorInAuth, "an authorisation entry names one of this facilitator's own accounts")
      )
    }
    if (credentials.signatureExpirationLedger > window.maxLedger + EXPIRATION_TOLERANCE_LEDGERS) {
      return Either.left(
        refuse(
          Reason.expirationTooFar,
          `the authorisation expires at ledger ${credentials.signatureExpirationLedger}, past the allowed ${window.maxLedger}`
        )
      )
    }
    if (credentials.signatureExpirationLedger < window.currentLedger) {
      // The host refuses an expired signature, so the reference learns it from simulation.
      return Either.left(
        refuse(
          Reason.simulationFailed,
          `the authorisation expired at ledger ${credentials.signatureExpirationLedger} (the ledger is at ${window.currentLedger})`
        )
      )
    }
    if (entry.rootInvocation.subInvocations.length > 0) {
      return Either.left(
        refuse(Reason.hasSubinvocations, "an authorisation entry authorises sub-invocations beyond the transfer")
      )
    }
    if (scAddressString(credentials.address) === payer) {
      // One entry of the payer, authorising exactly this transfer: a second one (another nonce)
      // would make the same payment a new one to claim, and an entry for anything else is not the
      // one the transfer consumes.
      const root = entry.rootInvocation.function
      if (
        root.type !== "sorobanAuthorizedFunctionTypeContractFn" ||
        root.contractFn.toXdr("base64") !== call.toXdr("base64")
      ) {
        return Either.left(
          refuse(
            Reason.malformed,
            `an authorisation entry of payer ${payer} authorises something other than this transfer`
          )
        )
      }
      if (payerEntry !== null)
        return Either.left(
          refuse(Reason.malformed, `the transaction carries more than one authorisation entry of payer ${payer}`)
        )
      payerEntry = entry
    }
  }
  const credentials = payerEntry === null ? null : addressCredentials(payerEntry)
  if (payerEntry === null || credentials === null || credentials.signature.type === "scvVoid") {
    return Either.left(refuse(Reason.missingPayerSignature, `no signed authorisation of payer ${payer}`))
  }
  if (payerSignature(payerEntry, payer, passphrase) === "invalid") {
    // As with expiry, the reference hears of a bad signature from the host's simulation.
    return Either.left(
      refuse(
        Reason.simulationFailed,
        `the signature of payer ${payer} on its authorisation does not verify for this network`
      )
    )
  }
  return Either.right(credentials)
}
