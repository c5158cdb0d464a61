import { Context, Effect, Layer } from "effect"
import type { Config } from "../config.js"
import type { BuyAttempt, BuyRequest, BuyResult } from "../domain/buy.js"
import type { AgentPolicy } from "../domain/policy.js"
import { usdFloorUnits } from "../domain/stellar.js"
import { readBuyerKey, type StellarKey } from "../keys/stellarKey.js"
import type { OutboundRequests } from "../outbound/fetchAnswer.js"
import type { Deployment } from "../x402/challenge.js"
import { receiptOf, resultOf } from "./buyAnswer.js"
import { payPlan, type Tried } from "./buyPayment.js"
import { planFor } from "./buyPlan.js"
import {
  AllProvidersFailed,
  type BuyError,
  describeFailure,
  NothingEligible,
  OutcomeUnknown,
  PaidButFailed,
  ServiceFailure,
  SpendLimitReached
} from "./errors.js"
import { SextantClient } from "./SextantClient.js"
import { defaultSpendLedgerFile, SpendLedger } from "./SpendLedger.js"
import { perPaymentCapUsd } from "./spendControls.js"
import { makeSpendGuard } from "./spendGuard.js"

export interface BuyerShape {
  /**
   * One purchase, as README "Buying" numbers it: route, then for the selection and each fallback in
   * order, check, pay and read the answer, stopping at the first success (or the first payment that
   * may have settled); then ask the service for a receipt. Fails with a BuyError that carries every attempt.
   */
  readonly buy: (request: BuyRequest) => Effect.Effect<BuyResult, BuyError>
}

/**
 * The buyer: pays for a capability under a policy with the buyer's own key, through the service's
 * routing and receipts. Needs a SextantClient and the SpendLedger of its key.
 */
export class Buyer extends Context.Tag("sextant/Buyer")<Buyer, BuyerShape>() {
  static readonly layer = (settings: BuyerSettings) => Layer.effect(Buyer, make(settings))
}

export interface BuyerSettings {
  /** The buyer's key, read on this machine; only signed authorisations leave it. */
  readonly key: StellarKey
  /** Soroban RPC the payment is simulated on (`ledger.sorobanRpcUrl`). */
  readonly rpcUrl: string
  /** The inclusion fee bid on a payment (`ledger.inclusionFeeStroops`). */
  readonly inclusionFeeStroops: number
  readonly deployment: Deployment
  readonly decimals: number
  /** The outbound guard, timeout and body cap for requests to resources. */
  readonly outbound: OutboundRequests
  /** What this Buyer may sign for over its lifetime (an MCP session), on top of the spend window. */
  readonly sessionCapUsd?: number
}

/**
 * The per-payment cap (`--max-usd`, else upstream's `spendControls` default of $1) tightens the
 * policy's price per request, never loosens it.
 */
export const effectivePolicy = (request: Pick<BuyRequest, "policy" | "maxUsd">): AgentPolicy => {
  const policy = request.policy ?? {}
  return {
    ...policy,
    maxPricePerRequestUsd: Math.min(perPaymentCapUsd(request.maxUsd), policy.maxPricePerRequestUsd ?? Infinity)
  }
}

const make = (settings: BuyerSettings) =>
  Effect.gen(function* () {
    const client = yield* SextantClient
    const sessionCap =
      settings.sessionCapUsd === undefined ? null : usdFloorUnits(settings.sessionCapUsd, settings.decimals)
    const guard = yield* makeSpendGuard(yield* SpendLedger, settings.key.address, sessionCap)

    const buy = (request: BuyRequest) =>
      Effect.gen(function* () {
        const policy = effectivePolicy(request)
        const decision = yield* client.policy
          .route({
            payload: {
              capability: request.capability,
              constraints: policy,
              ...(request.optimizeFor ? { optimizeFor: request.optimizeFor } : {})
            }
          })
          .pipe(Effect.mapError((e) => new ServiceFailure({ step: "routing", reason: describeFailure(e) })))
        const candidates = [...(decision.selected === null ? [] : [decision.selected]), ...decision.fallbacks]
        if (candidates.length === 0) {
          return yield* new NothingEligible({
            capability: request.capability,
            reason: decision.message,
            rejected: decision.rejected.length
          })
        }
        const attempts: Array<BuyAttempt> = []
        for (const [index, candidate] of candidates.entries()) {
          const plan = yield* planFor(client, settings, candidate, index + 1, policy, request.input)
          const tried: Tried =
            "ceiling" in plan ? yield* payPlan(settings, guard, plan) : { _tag: "Next", attempt: plan }
          attempts.push(tried.attempt)
          if (tried._tag === "Next") continue
          if (tried._tag === "Stop") {
            return yield* tried.attempt.outcome === "unknown"
              ? new OutcomeUnknown({ attempts })
              : new PaidButFailed({ attempts })
          }
          const receipt = yield* receiptOf(client, request, policy, candidate, tried)
          return { ...resultOf(settings, candidate, index + 1, tried, attempts), ...receipt } satisfies BuyResult
        }
        return yield* attempts.every((a) => a.outcome === "over_budget")
          ? new SpendLimitReached({ attempts })
          : new AllProvidersFailed({ attempts })
      }).pipe(Effect.withSpan("Buyer.buy"))

    return Buyer.of({ buy })
  })

export interface BuyerOptions {
  /** The buyer key file (`buyer.keyFile` unless overridden); it must exist. */
  readonly keyFile: string
  readonly sessionCapUsd?: number
}

/**
 * The Buyer of a configuration: the buyer key read from `keyFile`, the spend ledger of that key
 * (`buyer.spendLedgerFile`, else next to the key), the deployment's network, asset and Soroban RPC,
 * and `buyer`'s outbound guard. The SextantClient is the caller's: over HTTP for `sextant buy`,
 * in-process for the MCP server.
 */
export const BuyerLive = (config: Config, options: BuyerOptions) =>
  Layer.unwrapEffect(
    Effect.map(readBuyerKey(options.keyFile), (key) => {
      const { buyer } = config
      const ledger = SpendLedger.layer({
        file: buyer.spendLedgerFile ?? defaultSpendLedgerFile(options.keyFile),
        windowSeconds: buyer.windowSeconds,
        limit: usdFloorUnits(buyer.maxUsdPerWindow, config.asset.decimals)
      })
      return Buyer.layer({
        key,
        rpcUrl: config.ledger.sorobanRpcUrl,
        inclusionFeeStroops: config.ledger.inclusionFeeStroops,
        deployment: { network: config.network, assetContract: config.asset.assetContract },
        decimals: config.asset.decimals,
        outbound: buyer,
        ...(options.sessionCapUsd === undefined ? {} : { sessionCapUsd: options.sessionCapUsd })
      }).pipe(Layer.provide(ledger))
    })
  )
