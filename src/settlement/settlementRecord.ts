import type { JournalEntry, SettlementTransition } from "../domain/settlements.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import type { SettlementRecord } from "../domain/x402.js"

/** A journal entry and its history as `GET /x402/settlements` shows it. */
export const toRecord = (
  entry: JournalEntry,
  decimals: number,
  history: ReadonlyArray<SettlementTransition>
): SettlementRecord => ({
  id: entry.id,
  idempotencyKey: entry.idempotencyKey,
  state: entry.state,
  principal: entry.principal,
  network: entry.network,
  scheme: entry.scheme,
  payTo: entry.payTo,
  amount: entry.amount,
  worstCaseUsd: baseUnitsToUsd(entry.worstCaseUnits.toString(), decimals),
  backendId: entry.backendId,
  transaction: entry.transaction,
  payer: entry.payer,
  errors: entry.errors,
  createdAt: new Date(entry.createdAtMs).toISOString(),
  updatedAt: new Date(entry.updatedAtMs).toISOString(),
  history: history.map((t) => ({ from: t.from, to: t.to, reason: t.reason, at: new Date(t.atMs).toISOString() }))
})
