import { Either } from "effect"
import type { HistoryHour, HourlyRollup } from "../domain/observations.js"
import { reportedPercentiles } from "./latencySketch.js"
import { probeRatios } from "./metrics.js"
import { BUCKET_MS } from "./rollingWindow.js"

/**
 * A resource's history hour by hour: the hourly rollups kept `probes.retentionDays`, and the hours
 * its rolling window still holds. Pure: the caller reads both from the store.
 */

const DAY_MS = 86_400_000

/** The span a history read covers: the hours that start at or after `fromMs` and before `toMs`. */
export interface HistoryRange {
  readonly fromMs: number
  readonly toMs: number
}

/**
 * The span asked for: `to` defaults to now and `from` to a day before `to`. Refused (the reason)
 * when `from` is not before `to` or the span is longer than rollups are kept, so an answer holds at
 * most `retentionDays` x 24 hours (the hours starting in a span of that length).
 */
export const historyRange = (
  query: { readonly from?: string | undefined; readonly to?: string | undefined },
  nowMs: number,
  retentionDays: number
): Either.Either<HistoryRange, string> => {
  const toMs = query.to === undefined ? nowMs : Date.parse(query.to)
  const fromMs = query.from === undefined ? toMs - DAY_MS : Date.parse(query.from)
  if (fromMs >= toMs) return Either.left("from must be before to")
  if (toMs - fromMs > retentionDays * DAY_MS) {
    return Either.left(`from and to may be at most probes.retentionDays (${retentionDays}) days apart`)
  }
  return Either.right({ fromMs, toMs })
}

const toHistoryHour = (hour: HourlyRollup): HistoryHour => ({
  startAt: new Date(hour.startMs).toISOString(),
  endAt: new Date(hour.startMs + BUCKET_MS).toISOString(),
  probes: hour.probes,
  answered: hour.answered,
  healthy: hour.healthy,
  priceMatches: hour.priceMatches,
  connectFailures: hour.connectFailures,
  ...probeRatios(hour),
  ...reportedPercentiles([hour.latency])
})

/**
 * The hours of `range` that hold probes, oldest first, each once. `rollups` are the stored hours,
 * `window` the buckets of the resource's rolling window: the window's bucket replaces a rollup of
 * the same hour. The recorder writes a rollup as a copy of its bucket, in the transaction that
 * stores the window, when the hour closes or a late probe changes it; so the two agree, except
 * for the open hour (no rollup until a later hour starts) and a window rebuilt from the raw
 * observations of a metrics row older than rolling windows (no rollup saw those hours).
 */
export const historyHours = (
  rollups: ReadonlyArray<HourlyRollup>,
  window: ReadonlyArray<HourlyRollup>,
  range: HistoryRange
): Array<HistoryHour> => {
  const byHour = new Map<number, HourlyRollup>()
  for (const hour of [...rollups, ...window]) {
    if (hour.startMs >= range.fromMs && hour.startMs < range.toMs) byHour.set(hour.startMs, hour)
  }
  return [...byHour.values()]
    .filter((hour) => hour.probes > 0)
    .sort((a, b) => a.startMs - b.startMs)
    .map(toHistoryHour)
}
