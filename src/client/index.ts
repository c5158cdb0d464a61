/**
 * The TypeScript client of Sextant, for agents: the typed client of every endpoint
 * (`SextantClient`, derived from the HttpApi definition) and the `Buyer`, whose `buy` routes, pays
 * with the buyer's own key and returns the data with its receipt. See the README, "Buying".
 */
import { Layer } from "effect"
import type { Config } from "../config.js"
import { BuyerLive } from "./Buyer.js"
import { SextantClient } from "./SextantClient.js"

export type { BuyAttempt, BuyRequest, BuyResult } from "../domain/buy.js"
export type { PreflightAnswer, PreflightPolicy, PreflightRequest } from "../domain/preflight.js"
export { Buyer, BuyerLive, type BuyerShape, effectivePolicy } from "./Buyer.js"
export * from "./errors.js"
export { describeVerdict, type GuardDecision, guardClient, type SextantGuardOptions } from "./guard.js"
export {
  makeSextantClient,
  SextantClient,
  type SextantClientOptions,
  type SextantClientShape
} from "./SextantClient.js"
export { OverSpendLimit, SpendLedger, SpendLedgerUnavailable } from "./SpendLedger.js"

export interface BuyerClientOptions {
  /** Default `buyer.keyFile`. */
  readonly keyFile?: string
  /** The service's base URL; default `buyer.service`. */
  readonly service?: string
  /** Default `buyer.apiKey`. */
  readonly apiKey?: string
  readonly sessionCapUsd?: number
}

/**
 * A Buyer talking to a service over HTTP: what `sextant buy` runs, and what an agent provides to
 * call `Buyer.buy` from TypeScript (the config from `loadConfig`, or its defaults).
 */
export const BuyerClientLive = (config: Config, options: BuyerClientOptions = {}) => {
  const apiKey = options.apiKey ?? config.buyer.apiKey
  return BuyerLive(config, {
    keyFile: options.keyFile ?? config.buyer.keyFile,
    ...(options.sessionCapUsd === undefined ? {} : { sessionCapUsd: options.sessionCapUsd })
  }).pipe(
    Layer.provide(
      SextantClient.layer({
        baseUrl: options.service ?? config.buyer.service,
        ...(apiKey === undefined ? {} : { apiKey })
      })
    )
  )
}
