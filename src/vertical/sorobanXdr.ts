import { Address, type rpc, scValToNative, xdr } from "@stellar/stellar-sdk"
import type { ContractInstance, TokenEvent } from "./upstream.js"

/** Turns a contract-instance ledger entry into plain values; throws on an entry of another kind. */
export const summarizeInstance = (entry: rpc.Api.LedgerEntryResult): ContractInstance => {
  const instance = entry.val.contractData().val().instance()
  const executable = instance.executable()
  return {
    executable:
      executable.switch().value === xdr.ContractExecutableType.contractExecutableStellarAsset().value
        ? { type: "stellar_asset" }
        : { type: "wasm", wasmHash: executable.wasmHash().toString("hex") },
    storage: (instance.storage() ?? []).map((e) => [scValToNative(e.key()), scValToNative(e.val())] as const),
    lastModifiedLedger: entry.lastModifiedLedgerSeq ?? null,
    liveUntilLedger: entry.liveUntilLedgerSeq ?? null
  }
}

/** A contract event reduced to its name (first topic), the addresses among its topics and its data. */
export const summarizeEvent = (event: rpc.Api.EventResponse): TokenEvent | null => {
  const [first, ...rest] = event.topic
  if (!first || first.switch().value !== xdr.ScValType.scvSymbol().value) return null
  return {
    name: first.sym().toString(),
    addresses: rest.filter((t) => t.switch().value === xdr.ScValType.scvAddress().value).map((t) => Address.fromScVal(t).toString()),
    value: scValToNative(event.value),
    ledger: event.ledger,
    time: event.ledgerClosedAt,
    transaction: event.txHash
  }
}
