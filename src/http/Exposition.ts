import { Clock, Context, Effect, Layer } from "effect"
import { Registry } from "prom-client"
import { AppConfig } from "../config.js"
import { windowStartMs } from "../domain/budgets.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { SettlementState } from "../domain/x402.js"
import { CatalogTableRepo } from "../store/CatalogTableRepo.js"
import { SettlementJournal } from "../store/SettlementJournal.js"
import { Instruments, stateGauges } from "../telemetry/Instruments.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"

export interface ExpositionShape {
  readonly contentType: string
  /** The text exposition of every instrument and gauge, state read at scrape time. */
  readonly text: Effect.Effect<string>
}

/** `GET /metrics`: the Prometheus text exposition of this service graph's instruments and state. */
export class Exposition extends Context.Tag("sextant/Exposition")<Exposition, ExpositionShape>() {
  static readonly Live = Layer.effect(
    Exposition,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const instruments = yield* Instruments
  const table = yield* CatalogTableRepo
  const journal = yield* SettlementJournal
  const pool = yield* FacilitatorPool
  // Without the live instruments (a test graph) the page still answers, from a registry of its own.
  const registry = instruments.registry ?? new Registry()
  const gauges = stateGauges(registry)
  const { budgets } = config

  /** State is read at scrape time, not kept in step with every write: the store is the truth. */
  const refresh = Effect.gen(function* () {
    const nowMs = yield* Clock.currentTimeMillis
    const counts = yield* table.counts()
    const states = yield* journal.countsByState()
    const totals = yield* journal.windowTotals(windowStartMs(budgets, nowMs))
    const backends = yield* pool.status
    gauges.catalog.reset()
    for (const c of counts) gauges.catalog.set({ status: c.status, level: String(c.level) }, c.count)
    // Every state is exported, 0 included, so a rate or an alert on `indeterminate` has a series to read.
    for (const state of SettlementState.literals) gauges.journal.set({ state }, states.get(state) ?? 0)
    gauges.backendHealthy.reset()
    for (const b of backends) gauges.backendHealthy.set({ backend: b.id }, b.healthy ? 1 : 0)
    const fee = Number(totals.feeStroops)
    gauges.feeUsed.set(fee)
    gauges.feeRemaining.set(Math.max(0, budgets.globalFeeStroops - fee))
    gauges.spendUsed.set(baseUnitsToUsd(totals.spendUnits.toString(), config.asset.decimals))
    gauges.spendLimit.set(budgets.spendWindowUsd)
  })

  return {
    contentType: registry.contentType,
    text: Effect.zipRight(
      refresh,
      Effect.promise(() => registry.metrics())
    ).pipe(Effect.withSpan("Exposition.text"))
  } satisfies ExpositionShape
})
