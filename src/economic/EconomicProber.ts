import type { PaymentRequirements } from "@x402/core/types"
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { AppConfig } from "../config.js"
import type { EconomicEvent } from "../domain/evidence.js"
import type { ResourceId } from "../domain/ids.js"
import { baseUnitsToUsd, usdFloorUnits } from "../domain/stellar.js"
import type { KeyFileError } from "../keys/keyFileError.js"
import { loadOrCreateProbeKey } from "../keys/stellarKey.js"
import { repeatedPass } from "../lifecycle/repeatedPass.js"
import { type PaidAnswer, payFor } from "../payments/payFor.js"
import { payForTool } from "../payments/payForTool.js"
import { policyContext } from "../policy/evaluate.js"
import { ProbeSpendRepo } from "../store/ProbeSpendRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { EvidenceRecorder } from "../verification/EvidenceRecorder.js"
import { type EconomicTarget, economicTargets, type Skipped } from "./economicTargets.js"

/** What one cycle of economic probes did. */
export interface EconomicCycleReport {
  readonly paid: ReadonlyArray<{
    readonly resourceId: ResourceId
    readonly transaction: string | null
    readonly success: boolean
  }>
  readonly skipped: ReadonlyArray<Skipped>
  /** The daily budget stopped the cycle before these resources. */
  readonly overBudget: ReadonlyArray<ResourceId>
}

export interface EconomicProberShape {
  /**
   * One pass: pays each due target, in id order and one at a time, within the price cap, until the
   * day's budget runs out, recording what it saw.
   */
  readonly runCycle: Effect.Effect<EconomicCycleReport, KeyFileError>
}

/**
 * Economic probes: the service pays listed resources through the normal x402 flow with the
 * operator's probe key, within a per-probe price cap and a durable daily budget, and records what
 * it saw as economic evidence for the ledger to confirm.
 */
export class EconomicProber extends Context.Tag("sextant/EconomicProber")<EconomicProber, EconomicProberShape>() {
  static readonly Live = Layer.effect(
    EconomicProber,
    Effect.suspend(() => make)
  )

  /** Runs a cycle every `economicProbes.intervalSeconds` while the scope lives, when enabled. */
  static readonly schedule = Layer.scopedDiscard(
    Effect.gen(function* () {
      const { economicProbes } = yield* AppConfig
      if (!economicProbes.enabled) return
      const prober = yield* EconomicProber
      const cycle = Effect.tap(prober.runCycle, (report) => Effect.logInfo("economic probe cycle done", report))
      yield* repeatedPass(cycle, `${economicProbes.intervalSeconds} seconds`, "economic probe cycle failed")
    })
  )
}

type ProbeOutcome =
  | {
      readonly _tag: "Paid"
      readonly resourceId: ResourceId
      readonly transaction: string | null
      readonly success: boolean
    }
  | { readonly _tag: "Skipped"; readonly skipped: Skipped }
  | { readonly _tag: "OverBudget"; readonly resourceId: ResourceId }

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const resources = yield* ResourceReadsRepo
  const reader = yield* EvidenceReader
  const recorder = yield* EvidenceRecorder
  const spend = yield* ProbeSpendRepo
  const settings = config.economicProbes
  const { decimals } = config.asset
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  const budgetUnits = usdFloorUnits(settings.budgetUsdPerDay, decimals)
  const probeKey = yield* Effect.cached(loadOrCreateProbeKey(settings.payerKeyFile))

  /** What the probe saw, as economic evidence: pending until the ledger confirms its transaction. */
  const eventOf = (target: EconomicTarget, paid: PaidAnswer, payer: string, atMs: number): EconomicEvent => {
    const settled = paid.paymentResponse?.success === true && paid.paymentResponse.transaction !== ""
    return {
      source: "probe",
      resourceId: target.record.resource.id,
      payTo: paid.requirements.payTo,
      success: settled,
      transactionHash: settled ? (paid.paymentResponse?.transaction ?? null) : null,
      at: new Date(atMs).toISOString(),
      payer,
      expected: { payTo: paid.requirements.payTo, amount: paid.amount, scheme: "exact" },
      probe: {
        priceUsd: baseUnitsToUsd(paid.amount, decimals),
        settleLatencyMs: paid.latencyMs,
        httpStatus: paid.status,
        bodyMatchesType: paid.bodyIsJson === true
      }
    }
  }

  const probeOne = (target: EconomicTarget) =>
    Effect.gen(function* () {
      const resourceId = target.record.resource.id
      const units = BigInt(target.option.amount)
      const reservation = yield* spend.reserve(resourceId, units, budgetUnits, yield* Clock.currentTimeMillis)
      if (reservation === null) return { _tag: "OverBudget", resourceId } satisfies ProbeOutcome
      const key = yield* probeKey
      const { resource } = target.record
      const terms = {
        url: resource.url,
        signer: Redacted.value(key.signer),
        rpcUrl: config.ledger.sorobanRpcUrl,
        inclusionFeeStroops: config.ledger.inclusionFeeStroops,
        deployment,
        maxPrice: units,
        refuse: (requirements: PaymentRequirements) =>
          requirements.payTo === target.option.payTo ? null : `payTo is not the catalog's ${target.option.payTo}`,
        outbound: config.probes
      }
      // An MCP tool is paid with the arguments its probes call it with.
      const attempt = yield* (
        resource.mcp === undefined
          ? payFor({ ...terms, method: resource.method })
          : payForTool({
              ...terms,
              kind: resource.mcp.kind,
              toolName: resource.mcp.toolName,
              arguments: resource.mcp.example ?? {}
            })
      ).pipe(Effect.either)
      if (attempt._tag === "Left") {
        const error = attempt.left
        // Sent but unanswered: the money may have moved, so the budget stays spent.
        if (error._tag !== "PaymentOutcomeUnknown") yield* spend.release(reservation)
        const reason = `${error._tag}${"reason" in error ? `: ${String(error.reason)}` : ""}`
        yield* Effect.logWarning(`economic probe of ${resourceId} paid nothing: ${reason}`)
        return { _tag: "Skipped", skipped: { resourceId, reason } } satisfies ProbeOutcome
      }
      const event = eventOf(target, attempt.right, key.address, yield* Clock.currentTimeMillis)
      // Refused before settling: nothing was paid, so nothing is spent.
      if (!event.success) yield* spend.release(reservation)
      yield* recorder.recordEconomic(event, [target.record])
      return {
        _tag: "Paid",
        resourceId,
        transaction: event.transactionHash,
        success: event.success
      } satisfies ProbeOutcome
    })

  const runCycle = Effect.gen(function* () {
    const listed = yield* resources.list()
    const evidence = yield* reader.forResources(listed.map((r) => r.resource.id))
    const now = new Date(yield* Clock.currentTimeMillis)
    const { targets, skipped } = economicTargets(listed, evidence, settings, deployment, policyContext(config, now))
    const outcomes: Array<ProbeOutcome> = []
    for (const target of targets) {
      const outcome = yield* probeOne(target)
      outcomes.push(outcome)
      if (outcome._tag === "OverBudget") break
    }
    // Outcomes line up with targets; the one the budget stopped and all after it were not paid.
    const stoppedAt = outcomes.findIndex((o) => o._tag === "OverBudget")
    return {
      paid: outcomes.flatMap((o) =>
        o._tag === "Paid" ? [{ resourceId: o.resourceId, transaction: o.transaction, success: o.success }] : []
      ),
      skipped: [...skipped, ...outcomes.flatMap((o) => (o._tag === "Skipped" ? [o.skipped] : []))],
      overBudget: stoppedAt < 0 ? [] : targets.slice(stoppedAt).map((t) => t.record.resource.id)
    } satisfies EconomicCycleReport
  }).pipe(Effect.withSpan("EconomicProber.runCycle"))

  return { runCycle } satisfies EconomicProberShape
})
