import { Context, Effect, Layer, Redacted, Ref } from "effect"
import { createHash } from "node:crypto"
import type { BuyAttempt, BuyRequest, BuyResult } from "../domain/buy.js"
import type { AgentPolicy } from "../domain/policy.js"
import type { McpKind } from "../domain/mcp.js"
import type { ResourceInfo } from "../domain/resources.js"
import type { RankedCandidate } from "../domain/routes.js"
import { baseUnitsToUsd, usdFloorUnits } from "../domain/stellar.js"
import type { Config } from "../config.js"
import { readBuyerKey, type StellarKey } from "../keys/stellarKey.js"
import { isJsonType, type PaidAnswer, payFor } from "../payments/payFor.js"
import { payForTool } from "../payments/payForTool.js"
import type { Deployment } from "../x402/challenge.js"
import type { OutboundRequests } from "../outbound/fetchAnswer.js"
import { candidateRefusal, challengeRefusal, priceCeiling } from "./candidate.js"
import {
  AllProvidersFailed,
  type BuyError,
  NothingEligible,
  OutcomeUnknown,
  PaidButFailed,
  ServiceFailure,
  SpendLimitReached
} from "./errors.js"
import { type Placement, placeInput, toolArguments } from "./input.js"
import { judgeFailure, judgePaid } from "./outcome.js"
import { SextantClient, type SextantClientShape } from "./SextantClient.js"
import { perPaymentCapUsd } from "./spendControls.js"
import {
  defaultSpendLedgerFile,
  OverSpendLimit,
  type Reservation,
  SpendLedger,
  type SpendLedgerShape,
  type SpendLedgerUnavailable
} from "./SpendLedger.js"

type Resource = typeof ResourceInfo.Type

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

/** How one candidate ended and whether the purchase goes on. */
type Tried =
  | { readonly _tag: "Next"; readonly attempt: BuyAttempt }
  | { readonly _tag: "Stop"; readonly attempt: BuyAttempt }
  | Delivered

interface Delivered {
  readonly _tag: "Delivered"
  readonly attempt: BuyAttempt
  readonly paid: PaidAnswer
  readonly resource: Resource
  readonly transactionHash: string | null
}

/**
 * A failed call as a line: the service's error code (`{error, message}` answers) or the client's
 * own tag (an unreachable service, an answer that does not decode), then the message.
 */
const describe = (e: unknown) => {
  const { error, _tag, message } = (typeof e === "object" && e !== null ? e : {}) as { error?: unknown; _tag?: unknown; message?: unknown }
  const code = typeof error === "string" ? error : typeof _tag === "string" ? _tag : "Error"
  return typeof message === "string" && message !== "" ? `${code}: ${message}` : typeof e === "object" ? code : String(e)
}

const sha256Hex = (body: Uint8Array) => createHash("sha256").update(body).digest("hex")

/** The answer as data: parsed when it declares JSON and is, its text otherwise. */
const dataOf = (paid: PaidAnswer): unknown => {
  const text = (paid.body ?? Buffer.alloc(0)).toString("utf8")
  if (!isJsonType(paid.contentType)) return text
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/**
 * The per-payment cap (`--max-usd`, else upstream's `spendControls` default of $1) tightens the
 * policy's price per request, never loosens it.
 */
export const effectivePolicy = (request: Pick<BuyRequest, "policy" | "maxUsd">): AgentPolicy => {
  const policy = request.policy ?? {}
  return { ...policy, maxPricePerRequestUsd: Math.min(perPaymentCapUsd(request.maxUsd), policy.maxPricePerRequestUsd ?? Infinity) }
}

/** Where one candidate is bought: the resource as the service describes it and the input placed for its method. */
interface Plan {
  readonly candidate: RankedCandidate
  readonly rank: number
  readonly resource: Resource
  readonly placement: Placement
  /** For an `mcp` resource: what is read at `placement.url` (a tool, a resource or a prompt, by name) and its arguments. */
  readonly tool?: { readonly kind: McpKind; readonly toolName: string; readonly arguments: Readonly<Record<string, unknown>> }
  /** The most the buyer signs for it (base units). */
  readonly ceiling: bigint
}

const attemptOf = (candidate: RankedCandidate, rank: number, outcome: BuyAttempt["outcome"], reason: string, more: Partial<BuyAttempt> = {}): BuyAttempt => ({
  rank,
  resourceId: candidate.resourceId,
  providerId: candidate.providerId,
  outcome,
  reason,
  amount: null,
  httpStatus: null,
  transactionHash: null,
  ...more
})

/** The spend window and the session cap together: both reserve before anything is signed. */
const makeSpendGuard = (ledger: SpendLedgerShape, payer: string, sessionCap: bigint | null) =>
  Effect.map(Ref.make(0n), (sessionSpent) => {
    const sessionShare = (amount: bigint) => (sessionCap === null ? 0n : amount)
    return {
      reserve: (amount: bigint, resourceId: string) =>
        Effect.gen(function* () {
          const reservation = yield* ledger.reserve(payer, amount, resourceId)
          if (sessionCap === null) return reservation
          const over = yield* Ref.modify(sessionSpent, (spent) => (spent + amount <= sessionCap ? [null, spent + amount] : [spent, spent]))
          if (over === null) return reservation
          yield* ledger.release(reservation)
          return yield* new OverSpendLimit({ spent: over.toString(), amount: amount.toString(), limit: sessionCap.toString() })
        }),
      /** Nothing was signed under it. */
      release: (reservation: Reservation, reserved: bigint) =>
        Effect.zipRight(ledger.release(reservation), Ref.update(sessionSpent, (spent) => spent - sessionShare(reserved))),
      /** A signed payment left (once, or resent under its payment identifier): it counts once, at the amount signed (at most the reserved ceiling). */
      commit: (reservation: Reservation, reserved: bigint, signed: bigint, paymentIdentifier?: string) =>
        Effect.zipRight(ledger.commit(reservation, signed, paymentIdentifier), Ref.update(sessionSpent, (spent) => spent - sessionShare(reserved - signed)))
    }
  })
type SpendGuard = Effect.Effect.Success<ReturnType<typeof makeSpendGuard>>

/**
 * Steps 2.1 and 2.2 of a purchase (README, "Buying"): the buyer's own checks of the candidate,
 * then the resource's URL and method from the service and the input placed for that method. A
 * string is why the candidate is not tried.
 */
const planFor = (client: SextantClientShape, settings: BuyerSettings, candidate: RankedCandidate, rank: number, policy: AgentPolicy, input: unknown) =>
  Effect.gen(function* () {
    const refusal = candidateRefusal(candidate, policy, settings.deployment)
    if (refusal !== null) return attemptOf(candidate, rank, "refused", refusal)
    const detail = yield* Effect.either(client.resources.get({ path: { id: candidate.resourceId } }))
    if (detail._tag === "Left") return attemptOf(candidate, rank, "failed", `the service could not describe the resource: ${describe(detail.left)}`)
    const resource = detail.right.resource
    const ceiling = priceCeiling(candidate, policy, settings.decimals)
    if (resource.mcp !== undefined) {
      const args = toolArguments(input)
      if (args._tag === "Left") return attemptOf(candidate, rank, "refused", args.left)
      return { candidate, rank, resource, placement: { url: resource.url }, tool: { kind: resource.mcp.kind, toolName: resource.mcp.toolName, arguments: args.right }, ceiling } satisfies Plan
    }
    const placement = placeInput(resource.url, resource.method, input)
    if (placement._tag === "Left") return attemptOf(candidate, rank, "refused", placement.left)
    return { candidate, rank, resource, placement: placement.right, ceiling } satisfies Plan
  })

/**
 * Steps 2.3 to 2.6: reserve the ceiling, pay once through `payFor` (the 402 re-checked against the
 * routed option), and judge the answer. Only a ledger that cannot be written fails: nothing is
 * signed then.
 */
const payPlan = (settings: BuyerSettings, guard: SpendGuard, plan: Plan): Effect.Effect<Tried, SpendLedgerUnavailable> =>
  Effect.gen(function* () {
    const { candidate, rank, ceiling } = plan
    const attempt = (outcome: BuyAttempt["outcome"], reason: string, more: Partial<BuyAttempt> = {}) => attemptOf(candidate, rank, outcome, reason, more)
    const reservation = yield* guard.reserve(ceiling, candidate.resourceId).pipe(
      Effect.map((reserved) => ({ _tag: "Right" as const, right: reserved })),
      Effect.catchTag("OverSpendLimit", (over) => Effect.succeed({ _tag: "Left" as const, left: over }))
    )
    if (reservation._tag === "Left") {
      const { spent, amount, limit } = reservation.left
      return { _tag: "Next", attempt: attempt("over_budget", `${amount} base units would exceed the limit of ${limit} (${spent} already counted); nothing was signed`) }
    }
    const terms = {
      url: plan.placement.url,
      signer: Redacted.value(settings.key.signer),
      rpcUrl: settings.rpcUrl,
      inclusionFeeStroops: settings.inclusionFeeStroops,
      deployment: settings.deployment,
      maxPrice: ceiling,
      refuse: challengeRefusal(candidate),
      outbound: settings.outbound
    }
    const body = plan.placement.body === undefined ? {} : { body: plan.placement.body }
    const result = yield* (plan.tool === undefined ? payFor({ ...terms, method: plan.resource.method, ...body }) : payForTool({ ...terms, ...plan.tool })).pipe(Effect.either)

    if (result._tag === "Left") {
      const { outcome, reason } = judgeFailure(result.left)
      if (outcome !== "unknown") {
        yield* guard.release(reservation.right, ceiling)
        return { _tag: "Next", attempt: attempt(outcome, reason) }
      }
      // The signature left: it counts at the ceiling, the most it can move.
      const identifier = result.left._tag === "PaymentOutcomeUnknown" ? result.left.paymentIdentifier : undefined
      yield* guard.commit(reservation.right, ceiling, ceiling, identifier)
      return { _tag: "Stop", attempt: attempt("unknown", reason, { amount: ceiling.toString(), ...(identifier === undefined ? {} : { paymentIdentifier: identifier }) }) }
    }
    const paid = result.right
    const identifier = paid.paymentIdentifier ?? undefined
    yield* guard.commit(reservation.right, ceiling, BigInt(paid.amount), identifier)
    const verdict = judgePaid(paid)
    const signed = {
      amount: paid.amount,
      httpStatus: paid.status,
      transactionHash: paid.paymentResponse?.transaction ?? null,
      ...(identifier === undefined ? {} : { paymentIdentifier: identifier }),
      ...(paid.sends === undefined ? {} : { sends: paid.sends })
    }
    switch (verdict._tag) {
      case "Delivered": {
        const done = attempt("paid", `answered ${paid.status}`, { ...signed, transactionHash: verdict.transactionHash })
        return { _tag: "Delivered", attempt: done, paid, resource: plan.resource, transactionHash: verdict.transactionHash }
      }
      case "Unpaid":
        return { _tag: "Next", attempt: attempt("failed", verdict.reason, signed) }
      case "PaidFailed":
        return { _tag: "Stop", attempt: attempt("paid_failed", verdict.reason, signed) }
    }
  })

/** Step 3: the receipt of a delivered purchase; its failure is reported beside the data, never instead of it. */
const receiptOf = (client: SextantClientShape, request: BuyRequest, policy: AgentPolicy, candidate: RankedCandidate, delivered: Delivered) =>
  client.receipts
    .create({
      payload: {
        request: { capability: request.capability, constraints: policy, ...(request.optimizeFor ? { optimizeFor: request.optimizeFor } : {}) },
        resourceId: candidate.resourceId,
        payment: {
          network: candidate.option.network,
          scheme: "exact",
          asset: delivered.paid.requirements.asset,
          amount: delivered.paid.amount,
          ...(delivered.transactionHash === null ? {} : { transactionHash: delivered.transactionHash })
        },
        response: { status: delivered.paid.status, bodySha256: sha256Hex(delivered.paid.body ?? Buffer.alloc(0)) },
        ...(delivered.paid.sellerReceipt === null ? {} : { sellerReceipt: delivered.paid.sellerReceipt })
      }
    })
    .pipe(
      Effect.map((receipt) => ({ receipt })),
      Effect.catchAll((e) => Effect.succeed({ receipt: null, receiptError: describe(e) }))
    )

/** Step 4: the answer of a delivered purchase. */
const resultOf = (settings: BuyerSettings, candidate: RankedCandidate, rank: number, delivered: Delivered, attempts: ReadonlyArray<BuyAttempt>) => ({
  data: dataOf(delivered.paid),
  provider: { resourceId: candidate.resourceId, providerId: candidate.providerId, name: delivered.resource.name, url: delivered.resource.url, rank },
  paid: {
    network: candidate.option.network,
    scheme: "exact" as const,
    asset: delivered.paid.requirements.asset,
    amount: delivered.paid.amount,
    amountUsd: baseUnitsToUsd(delivered.paid.amount, settings.decimals),
    payTo: delivered.paid.requirements.payTo,
    payer: settings.key.address,
    transactionHash: delivered.transactionHash
  },
  attempts
})

const make = (settings: BuyerSettings) =>
  Effect.gen(function* () {
    const client = yield* SextantClient
    const sessionCap = settings.sessionCapUsd === undefined ? null : usdFloorUnits(settings.sessionCapUsd, settings.decimals)
    const guard = yield* makeSpendGuard(yield* SpendLedger, settings.key.address, sessionCap)

    const buy = (request: BuyRequest) =>
      Effect.gen(function* () {
        const policy = effectivePolicy(request)
        const decision = yield* client.policy
          .route({ payload: { capability: request.capability, constraints: policy, ...(request.optimizeFor ? { optimizeFor: request.optimizeFor } : {}) } })
          .pipe(Effect.mapError((e) => new ServiceFailure({ step: "routing", reason: describe(e) })))
        const candidates = [...(decision.selected === null ? [] : [decision.selected]), ...decision.fallbacks]
        if (candidates.length === 0) {
          return yield* new NothingEligible({ capability: request.capability, reason: decision.message, rejected: decision.rejected.length })
        }
        const attempts: Array<BuyAttempt> = []
        for (const [index, candidate] of candidates.entries()) {
          const plan = yield* planFor(client, settings, candidate, index + 1, policy, request.input)
          const tried: Tried = "ceiling" in plan ? yield* payPlan(settings, guard, plan) : { _tag: "Next", attempt: plan }
          attempts.push(tried.attempt)
          if (tried._tag === "Next") continue
          if (tried._tag === "Stop") {
            return yield* tried.attempt.outcome === "unknown" ? new OutcomeUnknown({ attempts }) : new PaidButFailed({ attempts })
          }
          const receipt = yield* receiptOf(client, request, policy, candidate, tried)
          return { ...resultOf(settings, candidate, index + 1, tried, attempts), ...receipt } satisfies BuyResult
        }
        return yield* attempts.every((a) => a.outcome === "over_budget") ? new SpendLimitReached({ attempts }) : new AllProvidersFailed({ attempts })
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
