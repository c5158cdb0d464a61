import { Duration, Effect } from "effect"
import { describeFailure, endpointName, type LedgerEndpoints } from "./clients.js"
import { LedgerUnavailable } from "./LedgerReader.js"

/**
 * How the reader talks to its two upstreams: each SDK call bounded by `timeoutMs`, each decode of
 * an answer guarded, every failure a LedgerUnavailable that names the endpoint (its host only:
 * a provider's URL may carry its API key).
 */
export type LedgerCalls = ReturnType<typeof ledgerCalls>
export type LedgerSource = "rpc" | "horizon"

export const ledgerCalls = (options: LedgerEndpoints & { readonly timeoutMs: number }) => {
  const names: Record<LedgerSource, string> = {
    rpc: `Soroban RPC ${endpointName(options.sorobanRpcUrl)}`,
    horizon: `Horizon ${endpointName(options.horizonUrl)}`
  }

  /** One SDK call, bounded by the timeout; every failure (refused, 5xx, JSON-RPC error, bad XDR) is LedgerUnavailable. */
  const call = <A>(source: LedgerSource, what: string, run: () => Promise<A>) =>
    Effect.tryPromise({
      try: run,
      catch: (e) => new LedgerUnavailable({ message: `${names[source]} ${what} failed: ${describeFailure(e)}` })
    }).pipe(
      Effect.timeoutFail({
        duration: Duration.millis(options.timeoutMs),
        onTimeout: () =>
          new LedgerUnavailable({ message: `${names[source]} ${what} did not answer within ${options.timeoutMs} ms` })
      })
    )

  /** Decoding an answer that arrived: a throw means the upstream sent something malformed. */
  const decode = <A>(source: LedgerSource, what: string, run: () => A) =>
    Effect.try({
      try: run,
      catch: (e) =>
        new LedgerUnavailable({ message: `${names[source]} ${what} answered malformed data: ${describeFailure(e)}` })
    })

  return { names, call, decode }
}
