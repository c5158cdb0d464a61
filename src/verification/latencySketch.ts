/**
 * A latency histogram whose bins are exact below 128 ms and 1/64 of a power of two above it
 * (log-linear, as HdrHistogram with two significant binary digits more). A nearest-rank
 * percentile read from it picks the bin that holds the exact nearest-rank sample, and reports
 * that bin's midpoint: exact below 128 ms, and within 1/128 (0.8 %) of the exact value above.
 * Adding a sample is O(1); bins are merged by adding counts, so windows are sums of hours.
 */

const EXACT_BELOW = 128
const SUB_BINS = 64

/** The bin of a latency in whole milliseconds (negative clamps to 0). */
export const binOf = (latencyMs: number): number => {
  const v = Math.max(0, Math.floor(latencyMs))
  if (v < EXACT_BELOW) return v
  const exponent = 31 - Math.clz32(v)
  const width = 2 ** (exponent - 6)
  return EXACT_BELOW + (exponent - 7) * SUB_BINS + Math.floor((v - 2 ** exponent) / width)
}

/** The value a bin reports: the sample itself below 128 ms, else the bin's midpoint. */
export const valueOfBin = (bin: number): number => {
  if (bin < EXACT_BELOW) return bin
  const exponent = 7 + Math.floor((bin - EXACT_BELOW) / SUB_BINS)
  const width = 2 ** (exponent - 6)
  const low = 2 ** exponent + ((bin - EXACT_BELOW) % SUB_BINS) * width
  return low + Math.floor((width - 1) / 2)
}

/** Bin counts, `[bin, count, bin, count, ...]` ascending by bin: compact to store as JSON. */
export type Bins = ReadonlyArray<number>

/** Adds one sample to `bins` (a new array; the argument is not changed). */
export const addSample = (bins: Bins, latencyMs: number): Bins => {
  const bin = binOf(latencyMs)
  const out: Array<number> = []
  let placed = false
  for (let i = 0; i < bins.length; i += 2) {
    const b = bins[i]!
    if (!placed && b === bin) {
      out.push(b, bins[i + 1]! + 1)
      placed = true
      continue
    }
    if (!placed && b > bin) {
      out.push(bin, 1)
      placed = true
    }
    out.push(b, bins[i + 1]!)
  }
  if (!placed) out.push(bin, 1)
  return out
}

/** Sums several histograms into a map of bin to count. */
export const mergeBins = (all: ReadonlyArray<Bins>): Map<number, number> => {
  const merged = new Map<number, number>()
  for (const bins of all) {
    for (let i = 0; i < bins.length; i += 2) merged.set(bins[i]!, (merged.get(bins[i]!) ?? 0) + bins[i + 1]!)
  }
  return merged
}

/**
 * Nearest-rank percentiles (the README's definition: the ceil(q x n)-th smallest sample) of the
 * merged bins, each reported as its bin's value; null without samples.
 */
export const percentilesOf = (merged: ReadonlyMap<number, number>, qs: ReadonlyArray<number>): Array<number | null> => {
  let total = 0
  for (const count of merged.values()) total += count
  if (total === 0) return qs.map(() => null)
  const ordered = [...merged.keys()].sort((a, b) => a - b)
  return qs.map((q) => {
    const rank = Math.max(1, Math.ceil(q * total))
    let seen = 0
    for (const bin of ordered) {
      seen += merged.get(bin)!
      if (seen >= rank) return valueOfBin(bin)
    }
    return valueOfBin(ordered[ordered.length - 1]!)
  })
}

/** The p50 and p95 the metrics report, over the sum of several histograms (hours); null without samples. */
export const reportedPercentiles = (
  all: ReadonlyArray<Bins>
): { readonly p50LatencyMs: number | null; readonly p95LatencyMs: number | null } => {
  const [p50, p95] = percentilesOf(mergeBins(all), [0.5, 0.95])
  return { p50LatencyMs: p50 ?? null, p95LatencyMs: p95 ?? null }
}
