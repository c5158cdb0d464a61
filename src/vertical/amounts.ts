/**
 * Horizon reports amounts as decimal strings with seven places ("12.5000000"). Sums and
 * thresholds are done in stroops (1e-7) as bigints so nothing is lost to floating point.
 */
const SCALE = 7

export const toStroops = (amount: string): bigint | null => {
  const match = /^(\d+)(?:\.(\d{1,7}))?$/.exec(amount)
  if (!match) return null
  const [, whole = "0", fraction = ""] = match
  return BigInt(whole) * 10n ** BigInt(SCALE) + BigInt(fraction.padEnd(SCALE, "0"))
}

/** An integer amount of base units written with `decimals` places, e.g. 125n at 2 places is "1.25". */
export const formatUnits = (units: bigint, decimals: number): string => {
  const sign = units < 0n ? "-" : ""
  const abs = units < 0n ? -units : units
  const scale = 10n ** BigInt(decimals)
  const fraction = decimals > 0 ? `.${(abs % scale).toString().padStart(decimals, "0")}` : ""
  return `${sign}${abs / scale}${fraction}`
}

export const fromStroops = (stroops: bigint): string => formatUnits(stroops, SCALE)

/** Sum of amounts; null when any of them is not an amount, so a bad upstream value is never read as 0. */
export const sumAmounts = (amounts: ReadonlyArray<string>): string | null => {
  let total = 0n
  for (const amount of amounts) {
    const stroops = toStroops(amount)
    if (stroops === null) return null
    total += stroops
  }
  return fromStroops(total)
}

/** `share` of `total` in stroops, rounded down; shares are given to a millionth. */
export const shareOf = (total: bigint, share: number): bigint =>
  (total * BigInt(Math.round(share * 1_000_000))) / 1_000_000n
