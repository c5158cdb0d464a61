import { Horizon, rpc } from "@stellar/stellar-sdk"

/** A Horizon and a Soroban RPC endpoint: the configured `ledger` pair, or the vertical's own. */
export interface LedgerEndpoints {
  readonly horizonUrl: string
  readonly sorobanRpcUrl: string
}

/**
 * The one place SDK clients are built, for the ledger reader and the vertical alike. Plain http
 * is allowed only when the URL asks for it (a local node, the test fixtures on loopback).
 */
export const stellarClients = (endpoints: LedgerEndpoints) => ({
  horizon: new Horizon.Server(endpoints.horizonUrl, { allowHttp: endpoints.horizonUrl.startsWith("http:") }),
  soroban: new rpc.Server(endpoints.sorobanRpcUrl, { allowHttp: endpoints.sorobanRpcUrl.startsWith("http:") })
})

/**
 * A short reason for a failed SDK call: the HTTP status, a JSON-RPC error's message (the SDK throws
 * the error object itself), or the error's own message. Never the request: its URL or headers may
 * carry a provider's API key.
 */
export const describeFailure = (e: unknown): string => {
  const status = (e as { response?: { status?: unknown } }).response?.status
  if (typeof status === "number") return `HTTP ${status}`
  const message = (e as { message?: unknown }).message
  return typeof message === "string" ? message : String(e)
}

/** An endpoint as error messages name it: the origin only, since a provider's path or query may hold a key. */
export const endpointName = (url: string): string => {
  try {
    return new URL(url).origin
  } catch {
    return "(unparsable URL)"
  }
}
