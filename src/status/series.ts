import type { RecordedObservation } from "../domain/observations.js"
import type { ResourcePaymentOption } from "../domain/resources.js"
import { statsOf } from "../verification/rollingWindow.js"

export interface SeriesPoint {
  /** Epoch ms: the middle of the bucket the value sums up. */
  readonly t: number
  readonly y: number
}

/** A resource's metric window cut into equal buckets, one point per bucket that holds probes. */
export interface WindowSeries {
  readonly startMs: number
  readonly endMs: number
  readonly availability: ReadonlyArray<SeriesPoint>
  readonly p50LatencyMs: ReadonlyArray<SeriesPoint>
  readonly p95LatencyMs: ReadonlyArray<SeriesPoint>
  /** The price the newest healthy probe of each bucket was asked, USD. */
  readonly observedPriceUsd: ReadonlyArray<SeriesPoint>
}

/**
 * Each bucket is summed up by `statsOf`, the rules (and latency sketch) the metrics row uses for
 * the whole window, so a plotted hour means what the table's 24 h figure means: availability is
 * answered over sent probes, latencies are of answered probes (nearest-rank percentiles, within
 * the sketch's bound).
 */
export const windowSeries = (
  observations: ReadonlyArray<RecordedObservation>,
  advertised: ReadonlyArray<ResourcePaymentOption>,
  startMs: number,
  endMs: number,
  buckets: number
): WindowSeries => {
  const width = (endMs - startMs) / buckets
  const grouped = Array.from({ length: buckets }, () => [] as Array<RecordedObservation>)
  for (const o of observations) {
    const at = Date.parse(o.observedAt)
    if (at < startMs || at > endMs) continue
    grouped[Math.min(buckets - 1, Math.floor((at - startMs) / width))]!.push(o)
  }
  const availability: Array<SeriesPoint> = []
  const p50: Array<SeriesPoint> = []
  const p95: Array<SeriesPoint> = []
  const price: Array<SeriesPoint> = []
  grouped.forEach((group, i) => {
    const stats = statsOf(group, advertised)
    if (stats.probes === 0) return
    const t = startMs + (i + 0.5) * width
    availability.push({ t, y: stats.answered / stats.probes })
    const median = stats.p50LatencyMs
    const tail = stats.p95LatencyMs
    if (median !== null) p50.push({ t, y: median })
    if (tail !== null) p95.push({ t, y: tail })
    const asked = stats.latestHealthy?.priceUsd ?? null
    if (asked !== null) price.push({ t, y: asked })
  })
  return { startMs, endMs, availability, p50LatencyMs: p50, p95LatencyMs: p95, observedPriceUsd: price }
}
