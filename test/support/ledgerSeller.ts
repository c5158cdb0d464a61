import { afterAll, beforeAll } from "bun:test"
import { startFixtureLedger } from "../fixtures/ledger.js"
import { startX402Fixture, type X402Fixture } from "../fixtures/x402Resource.js"

/**
 * For a test file: one fixture ledger and one x402 seller shared by its tests, plus a list where
 * each test puts what it starts (services, facilitators); all are stopped after the file.
 */
export const sharedLedgerAndSeller = () => {
  const ledger = startFixtureLedger()
  let seller: X402Fixture | undefined
  const running: Array<{ close: () => Promise<void> }> = []
  beforeAll(async () => {
    seller = await startX402Fixture()
  })
  afterAll(async () => {
    for (const r of running) await r.close()
    await seller?.stop()
    ledger.stop()
  })
  return {
    ledger,
    running,
    seller: () => {
      if (seller === undefined) throw new Error("the seller starts before the first test")
      return seller
    }
  }
}
