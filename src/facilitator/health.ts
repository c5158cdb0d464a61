/** Settles of one embedded backend since start, by how they ended. */
export interface SettleCounts {
  readonly settled: number
  readonly failed: number
  readonly pending: number
  readonly refused: number
}

/** What `/x402/facilitators` and `/health/dependencies` show of an embedded backend beside its health. */
export interface EmbeddedStatus {
  readonly network: string
  /** The account to fund (public; the key never leaves the process). */
  readonly feeAccount: string
  /** Last balance read (after a settle, or on `balanceCheckSeconds`); null before the first read. */
  readonly feeBalanceStroops: string | null
  readonly minFeeBalanceStroops: string
  readonly channels: number
  readonly leasesInUse: number
  readonly settles: SettleCounts
}

/** XLM (a decimal number from the config) in stroops, rounded down: 7 decimals. */
export const stroopsOf = (xlm: number): bigint => BigInt(Math.floor(xlm * 1e7))

/** Below the floor the fee account cannot be trusted to pay the next settles: the backend is unhealthy. */
export const belowFloor = (balanceStroops: bigint, floorStroops: bigint): boolean => balanceStroops < floorStroops
