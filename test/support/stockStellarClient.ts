import {
  Account,
  authorizeEntry,
  type Keypair,
  nativeToScVal,
  Operation,
  rpc,
  TransactionBuilder
} from "@stellar/stellar-sdk"
import type { PaymentRequirements, SchemeNetworkClient } from "@x402/fetch"
import { networkPassphrase, type StellarNetwork } from "../../src/domain/stellar.js"

/**
 * A Stellar `exact` client scheme for a stock @x402/fetch 2.27 client, written straight on
 * stellar-sdk 17 as a wallet integration would be (@x402/stellar 2.9's client cannot register with
 * core 2.27): it simulates the SEP-41 transfer on Soroban RPC, signs the recorded authorisation
 * for the window the scheme gives, and sends the transaction with the signed entry.
 */
export const stockStellarClient = (signer: Keypair, rpcUrl: string): SchemeNetworkClient => ({
  scheme: "exact",
  createPaymentPayload: async (x402Version: number, requirements: PaymentRequirements) => {
    const passphrase = networkPassphrase(requirements.network as StellarNetwork)
    const server = new rpc.Server(rpcUrl, { allowHttp: true })
    const invoke = Operation.invokeContractFunction({
      contract: requirements.asset,
      function: "transfer",
      args: [
        nativeToScVal(signer.publicKey(), { type: "address" }),
        nativeToScVal(requirements.payTo, { type: "address" }),
        nativeToScVal(BigInt(requirements.amount), { type: "i128" })
      ]
    })
    const draft = new TransactionBuilder(new Account(signer.publicKey(), "0"), {
      fee: "100",
      networkPassphrase: passphrase
    })
      .addOperation(invoke)
      .setTimeout(requirements.maxTimeoutSeconds)
      .build()
    const simulation = await server.simulateTransaction(draft)
    if (!rpc.Api.isSimulationSuccess(simulation)) throw new Error("simulation failed")
    const latest = (await server.getLatestLedger()).sequence
    const validUntil = latest + Math.ceil(requirements.maxTimeoutSeconds / 5)
    const auth = await Promise.all(
      (simulation.result?.auth ?? []).map((entry) => authorizeEntry(entry, signer, validUntil, passphrase))
    )
    const signed = rpc
      .assembleTransaction(
        new TransactionBuilder(new Account(signer.publicKey(), "0"), { fee: "100", networkPassphrase: passphrase })
          .addOperation(
            Operation.invokeHostFunction({ func: (draft.operations[0] as Operation.InvokeHostFunction).func, auth })
          )
          .setTimeout(requirements.maxTimeoutSeconds)
          .build(),
        simulation
      )
      .build()
    return { x402Version, payload: { transaction: signed.toXDR() } }
  }
})
