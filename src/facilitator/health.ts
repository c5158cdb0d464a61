/** Settles of one embedded backend since start, by how they ended. */
export interface SettleCounts {
  readonly settled: number
  readonly failed: number
  readonly pending: number
  readonly refused: number
}

/** XLM (a decimal number from the config) in stroops, rounded down: 7 decimals. */
export const stroopsOf = (xlm: number): bigint => BigInt(Math.floor(xlm * 1e7))

/** Below the floor the fee account cannot be trusted to pay the next settles: the backend is unhealthy. */
export const belowFloor = (balanceStroops: bigint, floorStroops: bigint): boolean => balanceStroops < floorStroops
