/** Items per second of `cycle` (which handles `perCycle` items once) repeated for about `ms`. */
export const throughput = async (ms: number, perCycle: number, cycle: () => Promise<unknown>) => {
  let items = 0
  const start = performance.now()
  while (performance.now() - start < ms) {
    await cycle()
    items += perCycle
  }
  return items / ((performance.now() - start) / 1000)
}
