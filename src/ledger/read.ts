import { Effect } from "effect"
import { networkPassphrase, type StellarNetwork } from "../domain/stellar.js"
import { type LedgerEndpoints, stellarClients } from "./clients.js"
import { nonceKey } from "./decode.js"
import type { LedgerReaderShape } from "./LedgerReader.js"
import { ledgerCalls } from "./ledgerCalls.js"
import { readTransaction } from "./readTransaction.js"
import { readTransferEvents } from "./readTransferEvents.js"

export interface LedgerReaderOptions extends LedgerEndpoints {
  /** The network whose passphrase an answered envelope is hashed with, to check it is the one asked for. */
  readonly network: StellarNetwork
  /** Bound on each RPC or Horizon call (a multi-page read is bounded per page). */
  readonly timeoutMs: number
  /** Events asked for per getEvents page; tests lower it to exercise paging. */
  readonly eventPageSize?: number
}

/**
 * The ledger read over Soroban RPC and Horizon: transactions (readTransaction.ts), `transfer`
 * events (readTransferEvents.ts), nonce entries and the latest ledger, each call bounded and its
 * failures LedgerUnavailable (ledgerCalls.ts).
 */
export const makeLedgerReader = (options: LedgerReaderOptions): LedgerReaderShape => {
  const clients = stellarClients(options)
  const calls = ledgerCalls(options)
  const { call, decode } = calls

  const readNonce = (address: string, nonce: bigint) =>
    Effect.gen(function* () {
      const key = yield* decode("rpc", "nonce key", () => nonceKey(address, nonce))
      const answer = yield* call("rpc", "getLedgerEntries", () => clients.soroban.getLedgerEntries(key))
      return { consumed: answer.entries.length > 0, latestLedger: answer.latestLedger }
    })

  return {
    transaction: readTransaction(calls, clients, networkPassphrase(options.network)),
    nonceConsumed: (address, nonce) =>
      readNonce(address, nonce).pipe(
        Effect.map((read) => read.consumed),
        Effect.withSpan("LedgerReader.nonceConsumed")
      ),
    nonceAt: (address, nonce) => readNonce(address, nonce).pipe(Effect.withSpan("LedgerReader.nonceAt")),
    transferEvents: readTransferEvents(calls, clients.soroban, options.eventPageSize ?? 200),
    latestLedger: () =>
      call("rpc", "getLatestLedger", () => clients.soroban.getLatestLedger()).pipe(
        Effect.map((answer) => answer.sequence),
        Effect.withSpan("LedgerReader.latestLedger")
      )
  }
}
