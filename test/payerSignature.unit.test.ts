import { describe, expect, test } from "bun:test"
import { Transaction } from "@stellar/stellar-sdk"
import { Either } from "effect"
import { networkPassphrase } from "../src/domain/stellar.js"
import { addressAuthorization } from "../src/ledger/authEntries.js"
import { decodePayment } from "../src/ledger/transfer.js"
import { transferTransaction } from "../src/payments/transferCall.js"
import { buildExactPayment, exactRequirements, seededBuyer } from "./fixtures/stellarPayment.js"

const PAY_TO = "GC2U7ZZWOPDKVNC66KNOCHPKSIMNESWR2RUHPY4C6JB5E2S3K2HOJ464"
const requirements = exactRequirements({ payTo: PAY_TO })
const victim = seededBuyer(61)
const attacker = seededBuyer(62)

const decoded = (transaction: string) => {
  const result = decodePayment(transaction, "stellar:testnet")
  if (Either.isLeft(result)) throw new Error(`refused: ${result.left.message}`)
  return result.right
}

const authOf = (transaction: string) => {
  const op = new Transaction(transaction, networkPassphrase("stellar:testnet")).operations[0]
  if (op?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
  return (op.auth ?? []).map((entry) => addressAuthorization(entry)!)
}

describe("a payer is verified only by the payer's own key", () => {
  test("a payment signed by the payer's key is payer-verified", async () => {
    const payment = await buildExactPayment(requirements, { buyer: victim })
    expect(decoded(payment.payload.transaction)).toMatchObject({
      payerVerified: true,
      transfer: { from: victim.publicKey() }
    })
  })

  test("a payment 'from' the victim signed by another key (a valid signature, by the wrong key) is not payer-verified", async () => {
    const payment = await buildExactPayment(requirements, { buyer: victim, signer: attacker })
    const payer = decoded(payment.payload.transaction)
    expect(payer.transfer.from).toBe(victim.publicKey())
    expect(payer.payerVerified).toBe(false)
  })

  test("the payer entry is the one authorising this transfer, not the first entry of the payer's", async () => {
    const payment = await buildExactPayment(requirements, { buyer: victim, decoyEntry: true })
    const [decoy, real] = authOf(payment.payload.transaction)
    expect(decoy!.nonce).not.toBe(real!.nonce)
    // The nonce the ledger is asked about (failover, the reconciler) is the transfer's own.
    expect(decoded(payment.payload.transaction).authorization).toEqual({
      nonce: real!.nonce.toString(),
      expirationLedger: real!.expirationLedger
    })
  })

  test("a transfer whose only entry of the payer's authorises something else carries no authorisation and no identity", async () => {
    const other = await buildExactPayment({ ...requirements, amount: "20000" }, { buyer: victim })
    const otherOp = new Transaction(other.payload.transaction, networkPassphrase("stellar:testnet")).operations[0]
    if (otherOp?.type !== "invokeHostFunction") throw new Error("not an InvokeHostFunction")
    // A transfer of 10000 carrying only the payer's signed authorisation of a transfer of 20000.
    const spliced = transferTransaction({
      network: "stellar:testnet",
      terms: { asset: requirements.asset, from: victim.publicKey(), to: PAY_TO, amount: 10000n },
      auth: otherOp.auth ?? [],
      timeoutSeconds: 60,
      inclusionFeeStroops: 100
    }).toXdr()
    expect(decoded(spliced)).toMatchObject({ authorization: null, payerVerified: false })
  })
})
