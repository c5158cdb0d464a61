import { Clock, Effect, Option } from "effect"
import { AppConfig } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import type { StoredStanding } from "../domain/metrics.js"
import type { ResourceRecord, ServiceStatus } from "../domain/resources.js"
import { EconomicEventsRepo, type PaymentSummary } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { sortableId } from "../store/sortableId.js"
import { TransitionsRepo } from "../store/TransitionsRepo.js"
import { snapshotFrom, windowMs } from "./metrics.js"
import { encodeWindow, type RollingWindow, statsAt } from "./rollingWindow.js"
import { deriveStanding, type Standing, statusRules } from "./status.js"
import { storedWindow } from "./storedWindow.js"

/** The steps the evidence writers share: a resource's standing read, derived and moved. */
export type StandingWrites = Effect.Effect.Success<typeof makeStandingWrites>

export const makeStandingWrites = Effect.gen(function* () {
  const config = yield* AppConfig
  const listings = yield* ResourceListingRepo
  const observations = yield* ObservationsRepo
  const metrics = yield* MetricsRepo
  const transitions = yield* TransitionsRepo
  const economic = yield* EconomicEventsRepo

  /** A transition row and the listing's new status, when the standing moved. */
  const moveTo = (
    resourceId: ResourceId,
    from: { status: ServiceStatus; level: number },
    next: Standing,
    nowMs: number
  ) =>
    Effect.gen(function* () {
      if (from.status === next.status && from.level === next.level) return
      yield* transitions.insert(sortableId("tr", nowMs), {
        resourceId,
        from: from.status,
        to: next.status,
        fromLevel: from.level,
        toLevel: next.level,
        reason: next.reason,
        at: new Date(nowMs).toISOString()
      })
      yield* listings.setStatus(resourceId, next.status, next.level)
    })

  /**
   * A note in the transitions without a change of status: the seller's offer signing key changed,
   * which a buyer that takes the signer as the seller's identity must be able to see.
   */
  const signerNote = (
    resourceId: ResourceId,
    standing: Standing,
    change: { from: string; to: string },
    nowMs: number
  ) =>
    transitions.insert(sortableId("tr", nowMs), {
      resourceId,
      from: standing.status,
      to: standing.status,
      fromLevel: standing.level,
      toLevel: standing.level,
      reason: `offer signing key changed from ${change.from} to ${change.to}`,
      at: new Date(nowMs).toISOString()
    })

  /** The stored status, level and metrics row; read under the writer's lock, since they change with every refresh. */
  const standingOf = (resourceId: ResourceId) =>
    Effect.map(metrics.standings([resourceId]), (rows) => Option.fromNullable(rows[0]))

  /** A resource's rolling window as stored; one from before rolling windows is rebuilt once, then stored. */
  const windowOfResource = storedWindow(observations, config.verification)
  const rules = statusRules(config)

  /** The metrics row and standing `window` gives, as of `nowMs`. No I/O. */
  const deriveFrom = (
    id: ResourceId,
    stored: StoredStanding,
    window: RollingWindow,
    payments: PaymentSummary,
    nowMs: number
  ) => {
    const stats = statsAt(window, nowMs, payments, config.verification)
    return {
      metrics: snapshotFrom(id, stats, stored.snapshot, payments.everSucceeded),
      next: deriveStanding(stats, payments.everSucceeded, nowMs, rules, stored.operatorQuarantine)
    }
  }

  const payTosOf = (record: ResourceRecord) => [...new Set(record.paymentOptions.map((o) => o.payTo))]

  /** Re-derives one resource from its stored window (new economic evidence, an operator's change). */
  const refresh = (record: ResourceRecord) =>
    Effect.gen(function* () {
      const id = record.resource.id
      const stored = yield* standingOf(id)
      if (Option.isNone(stored)) return null
      const nowMs = yield* Clock.currentTimeMillis
      const states = yield* metrics.windowStates([id])
      const window = yield* windowOfResource(record, states.get(id), nowMs)
      const payments = yield* economic.summary(
        id,
        payTosOf(record),
        nowMs - windowMs(config.verification),
        config.verification.minDistinctPayers
      )
      const { metrics: row, next } = deriveFrom(id, stored.value, window, payments, nowMs)
      yield* metrics.upsert([{ metrics: row, windowState: encodeWindow(window) }], new Date(nowMs).toISOString())
      yield* moveTo(id, stored.value, next, nowMs)
      return next
    })

  return { moveTo, signerNote, standingOf, windowOfResource, deriveFrom, payTosOf, refresh }
})
