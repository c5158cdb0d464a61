import { type rpc, scValToNative } from "@stellar/stellar-sdk"
import { scValAddress } from "../ledger/authEntries.js"
import type { ContractInstance, TokenEvent } from "./upstream.js"

/** Turns a contract-instance ledger entry into plain values; throws on an entry of another kind. */
export const summarizeInstance = (entry: rpc.Api.LedgerEntryResult): ContractInstance => {
  if (entry.val.type !== "contractData" || entry.val.contractData.val.type !== "scvContractInstance") {
    throw new Error(`not a contract instance entry: ${entry.val.type}`)
  }
  const instance = entry.val.contractData.val.instance
  const executable = instance.executable
  if (executable.type !== "contractExecutableWasm" && executable.type !== "contractExecutableStellarAsset") {
    throw new Error(`not a Wasm or Stellar Asset contract: ${executable.type}`)
  }
  return {
    executable:
      executable.type === "contractExecutableWasm"
        ? { type: "wasm", wasmHash: Buffer.from(executable.wasmHash.toBytes()).toString("hex") }
        : { type: "stellar_asset" },
    storage: (instance.storage ?? []).map((e) => [scValToNative(e.key), scValToNative(e.val)] as const),
    lastModifiedLedger: entry.lastModifiedLedgerSeq ?? null,
    liveUntilLedger: entry.liveUntilLedgerSeq ?? null
  }
}

/** A contract event reduced to its name (first topic), the addresses among its topics and its data. */
export const summarizeEvent = (event: rpc.Api.EventResponse): TokenEvent | null => {
  const [first, ...rest] = event.topic
  if (!first || first.type !== "scvSymbol") return null
  return {
    name: first.sym.toString(),
    addresses: rest.flatMap((t) => scValAddress(t) ?? []),
    value: scValToNative(event.value),
    ledger: event.ledger,
    time: event.ledgerClosedAt,
    transaction: event.txHash
  }
}
