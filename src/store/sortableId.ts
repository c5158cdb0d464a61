/**
 * Ids that sort like the instant they name: a prefix, epoch milliseconds zero-padded to 15
 * digits, and a random tail. Ordering by id is then ordering by time, which makes the id a
 * stable paging cursor even when two rows share a millisecond.
 */
export const sortableId = (prefix: string, ms: number) =>
  `${timeCursor(prefix, ms)}_${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`

/** Sorts before every id of that prefix taken at `ms` or later, after every earlier one. */
export const timeCursor = (prefix: string, ms: number) => `${prefix}_${String(Math.max(0, ms)).padStart(15, "0")}`

export const isSortableId = (prefix: string, value: string) =>
  new RegExp(`^${prefix}_\\d{15}_[0-9a-f]{12}$`).test(value)
