import { Address, type rpc, scValToNative, xdr } from "@stellar/stellar-sdk"
import type { LedgerTransfer, TransferEvent } from "./LedgerReader.js"

/** The operations of an envelope: a v1 transaction's, or a fee bump's inner transaction's. */
const operationsOf = (envelope: xdr.TransactionEnvelope): ReadonlyArray<xdr.Operation> => {
  switch (envelope.switch().value) {
    case xdr.EnvelopeType.envelopeTypeTx().value:
      return envelope.v1().tx().operations()
    case xdr.EnvelopeType.envelopeTypeTxFeeBump().value:
      return envelope.feeBump().tx().innerTx().v1().tx().operations()
    default:
      return envelope.v0().tx().operations()
  }
}

/** The strkey of an address ScVal (G, C or M), or null for any other value. */
const addressOf = (value: xdr.ScVal | undefined): string | null =>
  value?.switch().value === xdr.ScValType.scvAddress().value ? Address.fromScVal(value).toString() : null

/**
 * A SEP-41 amount: the i128 itself, or (CAP-67, a transfer to a muxed destination) a map whose
 * `amount` is that i128. Null for anything else.
 */
const amountOf = (value: xdr.ScVal | undefined): bigint | null => {
  if (!value) return null
  if (value.switch().value === xdr.ScValType.scvI128().value) return scValToNative(value) as bigint
  if (value.switch().value !== xdr.ScValType.scvMap().value) return null
  const entry = (value.map() ?? []).find((e) => e.key().switch().value === xdr.ScValType.scvSymbol().value && e.key().sym().toString() === "amount")
  return entry ? amountOf(entry.val()) : null
}

const transfer = (contract: string, from: xdr.ScVal | undefined, to: xdr.ScVal | undefined, amount: xdr.ScVal | undefined) => {
  const payer = addressOf(from)
  const payee = addressOf(to)
  const value = amountOf(amount)
  return payer !== null && payee !== null && value !== null ? { contract, from: payer, to: payee, amount: value } : null
}

/**
 * The SEP-41 `transfer(from, to, amount)` calls an envelope's InvokeHostFunction operations make
 * directly (calls a contract makes inside them are not listed). Throws on malformed XDR.
 */
export const transfersOf = (envelope: xdr.TransactionEnvelope): ReadonlyArray<LedgerTransfer> =>
  operationsOf(envelope).flatMap((operation) => {
    const body = operation.body()
    if (body.switch().value !== xdr.OperationType.invokeHostFunction().value) return []
    const fn = body.invokeHostFunctionOp().hostFunction()
    if (fn.switch().value !== xdr.HostFunctionType.hostFunctionTypeInvokeContract().value) return []
    const call = fn.invokeContract()
    const args = call.args()
    if (call.functionName().toString() !== "transfer" || args.length !== 3) return []
    const found = transfer(Address.fromScAddress(call.contractAddress()).toString(), args[0], args[1], args[2])
    return found ? [found] : []
  })

export const TRANSFER_SYMBOL = xdr.ScVal.scvSymbol("transfer")

/**
 * Topic filters for `transfer` events from `from` to `to`: a Stellar Asset Contract emits four
 * topics (`transfer`, from, to, the asset's SEP-11 name), a plain SEP-41 token three. `*` matches
 * one segment, and only filters of the event's own length match it.
 */
export const transferTopicFilters = (from: string, to: string): Array<Array<string>> => {
  const head = [TRANSFER_SYMBOL, new Address(from).toScVal(), new Address(to).toScVal()].map((v) => v.toXDR("base64"))
  return [head, [...head, "*"]]
}

/** A contract event as a transfer, or null when it is not a well-formed SEP-41 `transfer` event. */
export const transferOfEvent = (event: rpc.Api.EventResponse): TransferEvent | null => {
  const [name, from, to] = event.topic
  if (!name || name.switch().value !== xdr.ScValType.scvSymbol().value || name.sym().toString() !== "transfer") return null
  if (!event.contractId || event.topic.length < 3 || event.topic.length > 4) return null
  const found = transfer(event.contractId.contractId(), from, to, event.value)
  return found ? { ...found, ledger: event.ledger, transactionHash: event.txHash, closedAt: isoTime(event.ledgerClosedAt) } : null
}

/**
 * The ledger key of a consumed address-credentials nonce. The host records a nonce as a TEMPORARY
 * contract-data entry stored under the authorising address itself, keyed by
 * `ScVal::LedgerKeyNonce(ScNonceKey { nonce })`, and keeps it live at least until the
 * authorisation's signature expiration ledger (stellar/rs-soroban-env,
 * soroban-env-host/src/auth.rs, `Host::consume_nonce`).
 */
export const nonceKey = (address: string, nonce: bigint): xdr.LedgerKey =>
  xdr.LedgerKey.contractData(
    new xdr.LedgerKeyContractData({
      contract: new Address(address).toScAddress(),
      key: xdr.ScVal.scvLedgerKeyNonce(new xdr.ScNonceKey({ nonce: xdr.Int64.fromString(nonce.toString()) })),
      durability: xdr.ContractDataDurability.temporary()
    })
  )

/** An ISO 8601 time from RPC's unix seconds (a number or a decimal string) or Horizon's ISO string. */
export const isoTime = (value: number | string): string =>
  new Date(typeof value === "number" || /^\d+$/.test(value) ? Number(value) * 1000 : value).toISOString()

/** The ledger a getEvents cursor (`<toid, 19 digits>-<event index>`) points into; null when it is not one. */
export const cursorLedger = (cursor: string | undefined): number | null => {
  const match = /^(\d{19})-\d{10}$/.exec(cursor ?? "")
  return match ? Number(BigInt(match[1]!) >> 32n) : null
}
