import { type FeeBumpTransaction, Keypair, rpc, type Transaction, xdr } from "@stellar/stellar-sdk"
import { Data, Duration, Effect } from "effect"
import type { StellarNetwork } from "../domain/stellar.js"
import { describeFailure, endpointName, type LedgerEndpoints, stellarClients } from "../ledger/clients.js"

/** Soroban RPC could not answer (refused, 5xx, JSON-RPC error, timeout). Never names the URL's path or query. */
export class RpcUnavailable extends Data.TaggedError("RpcUnavailable")<{ readonly message: string }> {}

/** An account as the ledger holds it: what a transaction from it must use next, and its XLM. */
export interface AccountState {
  readonly sequence: bigint
  readonly balanceStroops: bigint
}

/** Ledgers sampled to measure the close time: the mean interval over this many. */
const CLOSE_SAMPLE = 10
/** How long a measured close time is used before it is measured again. */
const CLOSE_TIME_TTL_MS = 60_000
/**
 * When the close time cannot be measured: each network's recent median (pubnet's Aug-2026 sample
 * was 6 s, testnet's 5 s), never a wider window than the network grants.
 */
const FALLBACK_LEDGER_SECONDS: Record<StellarNetwork, number> = { "stellar:testnet": 5, "stellar:pubnet": 6 }

/**
 * The Soroban RPC calls the embedded facilitator makes, each bounded by `timeoutMs`, over the
 * project's one SDK client factory (`ledger/clients.ts`) and the configured `ledger` endpoints.
 */
export const makeFacilitatorRpc = (endpoints: LedgerEndpoints, network: StellarNetwork, timeoutMs: number) => {
  const { soroban } = stellarClients(endpoints)
  const name = `Soroban RPC ${endpointName(endpoints.sorobanRpcUrl)}`
  const call = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({
      try: run,
      catch: (e) => new RpcUnavailable({ message: `${name} ${what} failed: ${describeFailure(e)}` })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(timeoutMs),
        onTimeout: () => new RpcUnavailable({ message: `${name} ${what} did not answer within ${timeoutMs} ms` })
      })
    )

  let measured: { readonly seconds: number; readonly at: number } | null = null

  /**
   * The close interval of the last ledgers, from their close times (`getLedgers`): the span over
   * the ledgers between, since close times are whole seconds and sub-second ledgers would round.
   */
  const measureLedgerSeconds = (latest: number) =>
    call("getLedgers", () =>
      soroban.getLedgers({ startLedger: Math.max(1, latest - CLOSE_SAMPLE), pagination: { limit: CLOSE_SAMPLE + 1 } })
    ).pipe(
      Effect.map((answer) => {
        const closes = answer.ledgers
          .map((l) => ({ sequence: l.sequence, at: Number(l.ledgerCloseTime) }))
          .filter((l) => Number.isFinite(l.at))
        const first = closes[0]
        const last = closes.at(-1)
        if (first === undefined || last === undefined || last.sequence <= first.sequence || last.at <= first.at)
          return null
        return (last.at - first.at) / (last.sequence - first.sequence)
      })
    )

  /** Seconds per ledger as measured recently; the network's fallback while it cannot be measured. */
  const ledgerSeconds = (latest: number) =>
    Effect.gen(function* () {
      const now = Date.now()
      if (measured !== null && now - measured.at < CLOSE_TIME_TTL_MS) return measured.seconds
      const seconds = yield* Effect.orElseSucceed(measureLedgerSeconds(latest), () => null)
      if (seconds === null) return FALLBACK_LEDGER_SECONDS[network]
      measured = { seconds, at: now }
      return seconds
    })

  const account = (address: string) =>
    call("getLedgerEntries", () =>
      soroban.getLedgerEntries(
        xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId: Keypair.fromPublicKey(address).xdrPublicKey() }))
      )
    ).pipe(
      Effect.map((answer): AccountState | null => {
        const entry = answer.entries[0]
        if (entry === undefined || entry.val.type !== "account") return null
        return { sequence: entry.val.account.seqNum, balanceStroops: entry.val.account.balance }
      })
    )

  return {
    latestLedger: call("getLatestLedger", () => soroban.getLatestLedger()).pipe(Effect.map((l) => l.sequence)),
    ledgerSeconds,
    account,
    simulate: (tx: Transaction) => call("simulateTransaction", () => soroban.simulateTransaction(tx)),
    send: (tx: Transaction | FeeBumpTransaction) => call("sendTransaction", () => soroban.sendTransaction(tx)),
    status: (hash: string) =>
      call("getTransaction", () => soroban.getTransaction(hash)).pipe(Effect.map((answer) => answer.status))
  }
}
export type FacilitatorRpc = ReturnType<typeof makeFacilitatorRpc>

/** Whether a `sendTransaction` error result says the source's sequence number was stale (the fee bump's inner one too). */
export const isBadSequence = (answer: rpc.Api.SendTransactionResponse): boolean => {
  const result = answer.errorResult
  if (result === undefined) return false
  const code = result.result
  if (code.type === "txBadSeq") return true
  if (code.type === "txFeeBumpInnerFailed") return code.innerResultPair.result.result.type === "txBadSeq"
  return false
}

export const GetStatus = rpc.Api.GetTransactionStatus
