import { getMetricsFromIterator, type PromData, type PromHistogramData, type PromSummaryData } from "prom2javascript"

/**
 * Parses a Prometheus text exposition with an npm parser that shares no code with prom-client
 * (prom2javascript), so the test reads /metrics as a scraper would and needs no Python. It was
 * chosen over parse-prometheus-text-format, which merges every series of a labelled histogram into
 * one and drops their `_count` and `_sum`. It throws on a line it cannot parse and on a histogram
 * whose `+Inf` bucket differs from its `_count`; a family without TYPE or HELP is refused here.
 */

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}
export interface Family {
  /** The family name as TYPE declares it (a counter's keeps its `_total`). */
  readonly name: string
  readonly type: string
  readonly help: string
  /** One per exposition line; a histogram's as `_bucket` (with `le`), `_sum` and `_count`. */
  readonly samples: ReadonlyArray<Sample>
}

const histogramSamples = (name: string, series: PromHistogramData): ReadonlyArray<Sample> => [
  ...Object.entries(series.buckets).map(([le, value]) => ({
    name: `${name}_bucket`,
    labels: { ...series.labels, le },
    value
  })),
  { name: `${name}_sum`, labels: series.labels, value: series.sum ?? Number.NaN },
  { name: `${name}_count`, labels: series.labels, value: series.count }
]

const summarySamples = (name: string, series: PromSummaryData): ReadonlyArray<Sample> => [
  ...Object.entries(series.quantiles).map(([quantile, value]) => ({
    name,
    labels: { ...series.labels, quantile },
    value
  })),
  ...(series.sum === undefined ? [] : [{ name: `${name}_sum`, labels: series.labels, value: series.sum }]),
  ...(series.count === undefined ? [] : [{ name: `${name}_count`, labels: series.labels, value: series.count }])
]

export const parseExposition = async (text: string): Promise<ReadonlyArray<Family>> => {
  const metrics = await getMetricsFromIterator(text.split("\n")[Symbol.iterator]())
  return Object.entries(metrics).map(([name, metric]) => {
    if (metric.type === "unknown" || metric.help === "")
      throw new Error(`the exposition's family ${name} lacks its TYPE or HELP line`)
    const samples =
      metric.type === "histogram"
        ? (metric.data as ReadonlyArray<PromHistogramData>).flatMap((s) => histogramSamples(name, s))
        : metric.type === "summary"
          ? (metric.data as ReadonlyArray<PromSummaryData>).flatMap((s) => summarySamples(name, s))
          : (metric.data as ReadonlyArray<PromData>).map((s) => ({ name, labels: s.labels, value: s.value }))
    return { name, type: metric.type, help: metric.help, samples }
  })
}
