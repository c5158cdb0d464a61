import { Address, type rpc, StrKey, scValToNative, TransactionBuilder, xdr } from "@stellar/stellar-sdk"
import { type AddressAuthorization, addressAuthorizations, scValAddress } from "./authEntries.js"
import type { LedgerTransfer, TransferEvent } from "./LedgerReader.js"

/** The operations of an envelope: a v1 transaction's, a fee bump's inner transaction's, or a v0's. */
const operationsOf = (envelope: xdr.TransactionEnvelope): ReadonlyArray<xdr.Operation> => {
  switch (envelope.type) {
    case "envelopeTypeTx":
      return envelope.v1.tx.operations
    case "envelopeTypeTxFeeBump":
      return envelope.feeBump.tx.innerTx.v1.tx.operations
    case "envelopeTypeTxV0":
      return envelope.v0.tx.operations
  }
}

/**
 * The hash the network identifies an envelope by (hex): a fee bump's outer hash, else the
 * transaction's. A ledger answer is labelled with the hash asked for only when this equals it.
 */
export const envelopeHash = (envelope: xdr.TransactionEnvelope, passphrase: string): string =>
  Buffer.from(TransactionBuilder.fromXdr(envelope, passphrase).hash()).toString("hex")

/** The address-credential authorisations (`ADDRESS`, `ADDRESS_V2`) the envelope's host-function operations carry. */
export const authorizationsOf = (envelope: xdr.TransactionEnvelope): ReadonlyArray<AddressAuthorization> =>
  operationsOf(envelope).flatMap((operation) =>
    operation.body.type === "invokeHostFunction" ? addressAuthorizations(operation.body.invokeHostFunctionOp.auth) : []
  )

/**
 * A SEP-41 amount: the i128 itself, or (CAP-67, a transfer to a muxed destination) a map whose
 * `amount` is that i128. Null for anything else.
 */
const amountOf = (value: xdr.ScVal | undefined): bigint | null => {
  if (!value) return null
  if (value.type === "scvI128") return scValToNative(value) as bigint
  if (value.type !== "scvMap") return null
  const entry = (value.map ?? []).find((e) => e.key.type === "scvSymbol" && e.key.sym.toString() === "amount")
  return entry ? amountOf(entry.val) : null
}

const isTransferName = (value: xdr.ScVal | undefined) =>
  value?.type === "scvSymbol" && value.sym.toString() === "transfer"

/**
 * A `transfer` event's topics and data as a transfer: `[transfer, from, to]` plus, from a Stellar
 * Asset Contract, the asset's SEP-11 name. Null for any other event.
 */
const transferOfTopics = (
  contract: string,
  topics: ReadonlyArray<xdr.ScVal>,
  data: xdr.ScVal
): LedgerTransfer | null => {
  const [name, from, to] = topics
  if (!isTransferName(name) || topics.length < 3 || topics.length > 4) return null
  const payer = scValAddress(from)
  const payee = scValAddress(to)
  const value = amountOf(data)
  return payer !== null && payee !== null && value !== null ? { contract, from: payer, to: payee, amount: value } : null
}

/** The contract events a transaction's meta records: per operation (meta v4, Protocol 23 on), or Soroban's (v3). */
const contractEventsOf = (meta: xdr.TransactionMeta): ReadonlyArray<xdr.ContractEvent> => {
  switch (meta.type) {
    case "v4":
      return meta.v4.operations.flatMap((operation) => operation.events)
    case "v3":
      return meta.v3.sorobanMeta?.events ?? []
    default:
      return []
  }
}

/**
 * The SEP-41 transfers a transaction executed, read from the `transfer` events in its result meta:
 * what happened, not what the envelope asked for (a call can fail, or move other funds inside).
 */
export const transfersOfMeta = (meta: xdr.TransactionMeta): ReadonlyArray<LedgerTransfer> =>
  contractEventsOf(meta).flatMap((event) => transferOfContractEvent(event) ?? [])

/** A contract event as the SEP-41 transfer it records, or null when it is not a `transfer` event. */
export const transferOfContractEvent = (event: xdr.ContractEvent): LedgerTransfer | null => {
  if (event.type.name !== "contract" || event.contractId === null || event.body.type !== "v0") return null
  return transferOfTopics(StrKey.encodeContract(event.contractId.toBytes()), event.body.v0.topics, event.body.v0.data)
}

export const TRANSFER_SYMBOL = xdr.ScVal.scvSymbol("transfer")

/**
 * Topic filters for `transfer` events from `from` to `to`: a Stellar Asset Contract emits four
 * topics (`transfer`, from, to, the asset's SEP-11 name), a plain SEP-41 token three. `*` matches
 * one segment, and only filters of the event's own length match it.
 */
export const transferTopicFilters = (from: string, to: string): Array<Array<string>> => {
  const head = [TRANSFER_SYMBOL, new Address(from).toScVal(), new Address(to).toScVal()].map((v) => v.toXdr("base64"))
  return [head, [...head, "*"]]
}

/** A contract event as a transfer, or null when it is not a well-formed SEP-41 `transfer` event. */
export const transferOfEvent = (event: rpc.Api.EventResponse): TransferEvent | null => {
  if (!event.contractId) return null
  const found = transferOfTopics(event.contractId.contractId(), event.topic, event.value)
  return found
    ? { ...found, ledger: event.ledger, transactionHash: event.txHash, closedAt: isoTime(event.ledgerClosedAt) }
    : null
}

/**
 * The ledger key of a consumed address-credentials nonce. The host records a nonce as a TEMPORARY
 * contract-data entry stored under the authorising address itself, keyed by
 * `ScVal::LedgerKeyNonce(ScNonceKey { nonce })`, and keeps it live at least until the
 * authorisation's signature expiration ledger (stellar/rs-soroban-env,
 * soroban-env-host/src/auth.rs, `Host::consume_nonce`). `ADDRESS` and `ADDRESS_V2` share it.
 */
export const nonceKey = (address: string, nonce: bigint): xdr.LedgerKey =>
  xdr.LedgerKey.contractData(
    new xdr.LedgerKeyContractData({
      contract: new Address(address).toScAddress(),
      key: xdr.ScVal.scvLedgerKeyNonce(new xdr.ScNonceKey({ nonce })),
      durability: xdr.ContractDataDurability.temporary
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
