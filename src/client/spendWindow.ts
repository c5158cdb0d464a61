/**
 * The local spend window's rules, apart from its storage: what counts is every amount signed and
 * sent (or reserved for signing) by the key within the last `windowSeconds`.
 */

/** The earliest time (ms) still inside a rolling window ending at `nowMs`. */
export const windowStart = (nowMs: number, windowSeconds: number): number => nowMs - windowSeconds * 1000

/** Whether `amount` more fits under `limit` when `spent` is already counted in the window. */
export const fitsWindow = (spent: bigint, amount: bigint, limit: bigint): boolean => spent + amount <= limit
