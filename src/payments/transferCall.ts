import {
  Account,
  Address,
  contract,
  nativeToScVal,
  Operation,
  SorobanDataBuilder,
  type Transaction,
  TransactionBuilder,
  xdr
} from "@stellar/stellar-sdk"
import { networkPassphrase, type StellarNetwork } from "../domain/stellar.js"

/** The SEP-41 `transfer(from, to, amount)` a Stellar `exact` payment executes. */
export interface TransferTerms {
  /** The token contract (C...): the asset paid. */
  readonly asset: string
  readonly from: string
  readonly to: string
  /** Base units. */
  readonly amount: bigint
}

/** A deployment's network; a wallet signs only on the networks it knows. */
export const passphraseOf = (network: string) => networkPassphrase(network as StellarNetwork)

/**
 * The call's arguments and the invocation its payer authorises. The arguments follow SEP-41's
 * interface (https://github.com/stellar/stellar-protocol/blob/master/ecosystem/sep-0041.md).
 */
export const transferCall = (terms: TransferTerms) => {
  const args = [
    nativeToScVal(terms.from, { type: "address" }),
    nativeToScVal(terms.to, { type: "address" }),
    nativeToScVal(terms.amount, { type: "i128" })
  ]
  const invocation = new xdr.SorobanAuthorizedInvocation({
    function: xdr.SorobanAuthorizedFunction.sorobanAuthorizedFunctionTypeContractFn(
      new xdr.InvokeContractArgs({
        contractAddress: new Address(terms.asset).toScAddress(),
        functionName: "transfer",
        args
      })
    ),
    subInvocations: []
  })
  return { args, invocation }
}

/**
 * The transaction a Stellar `exact` payload carries: one InvokeHostFunction calling `transfer`,
 * with the given Soroban auth entries. Its source is the null account (`GAAA...WHF`, sequence 0),
 * the placeholder @x402/stellar's client leaves: the facilitator rebuilds the transaction with its
 * own account as source and pays the fee (x402 specs/schemes/exact/scheme_exact_stellar.md,
 * "Settlement Logic", phase 1), so only the operation and its signed auth entries matter.
 */
export const transferTransaction = (options: {
  readonly network: string
  readonly terms: TransferTerms
  readonly auth: ReadonlyArray<xdr.SorobanAuthorizationEntry>
  readonly timeoutSeconds: number
  /** The inclusion fee bid (stroops); assembling adds the resource fee simulation asks for. */
  readonly inclusionFeeStroops: number
}): Transaction => {
  const { args } = transferCall(options.terms)
  return new TransactionBuilder(new Account(contract.NULL_ACCOUNT, "0"), {
    fee: String(options.inclusionFeeStroops),
    networkPassphrase: passphraseOf(options.network)
  })
    .setSorobanData(new SorobanDataBuilder().build())
    .addOperation(
      Operation.invokeContractFunction({
        contract: options.terms.asset,
        function: "transfer",
        args,
        auth: [...options.auth]
      })
    )
    .setTimeout(options.timeoutSeconds)
    .build()
}
