import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { PaymentId, PrincipalId, SettlementId } from "../domain/ids.js"
import type { JournalEntry, NewEntry, SettlementTransition } from "../domain/settlements.js"
import { SettlementState } from "../domain/x402.js"
import { decodeRows, SqlBigInt, SqlNumber } from "./repository.js"
import { sortableId } from "./sortableId.js"

/**
 * Idempotency keys belong to a principal: the same key from two principals is two requests. The
 * unique `idempotency_key` column holds a client's key as the JSON pair [principal, key]; a
 * request without one is keyed by its payment alone, as [paymentId] (payment ids are unique
 * across principals anyway), which no client key can collide with.
 */
export const storedKey = (entry: Pick<NewEntry, "principal" | "idempotencyKey" | "paymentId">) =>
  JSON.stringify(entry.idempotencyKey === undefined ? [entry.paymentId] : [entry.principal, entry.idempotencyKey])

/** The key as the client knows it (the payment id when it sent none); anything else is shown as stored. */
const clientKey = (stored: string): string => {
  try {
    const parts: unknown = JSON.parse(stored)
    const key: unknown = Array.isArray(parts) ? parts.at(-1) : undefined
    if (typeof key === "string") return key
  } catch {
    // not a stored pair
  }
  return stored
}

const BackendErrorsJson = Schema.parseJson(
  Schema.Array(Schema.Struct({ backendId: Schema.String, error: Schema.String }))
)

const JournalRow = Schema.Struct({
  id: SettlementId,
  idempotency_key: Schema.String,
  payment_hash: PaymentId,
  request_hash: Schema.String,
  state: SettlementState,
  principal: PrincipalId,
  payer: Schema.NullOr(Schema.String),
  network: Schema.String,
  scheme: Schema.String,
  asset: Schema.String,
  pay_to: Schema.String,
  amount: Schema.String,
  worst_case_units: SqlBigInt,
  fee_stroops: SqlBigInt,
  backend_id: Schema.NullOr(Schema.String),
  transaction_hash: Schema.NullOr(Schema.String),
  errors_json: BackendErrorsJson,
  answer_status: Schema.NullOr(SqlNumber),
  answer_json: Schema.NullOr(Schema.parseJson()),
  auth_nonce: Schema.NullOr(Schema.String),
  auth_expiration_ledger: Schema.NullOr(SqlNumber),
  created_at_ms: SqlNumber,
  updated_at_ms: SqlNumber
})
type JournalRow = typeof JournalRow.Type

export const toEntry = (row: JournalRow): JournalEntry => ({
  id: row.id,
  idempotencyKey: clientKey(row.idempotency_key),
  paymentId: row.payment_hash,
  requestHash: row.request_hash,
  state: row.state,
  principal: row.principal,
  payer: row.payer,
  network: row.network,
  scheme: row.scheme,
  asset: row.asset,
  payTo: row.pay_to,
  amount: row.amount,
  worstCaseUnits: row.worst_case_units,
  feeStroops: row.fee_stroops,
  backendId: row.backend_id,
  transaction: row.transaction_hash,
  errors: row.errors_json,
  answer: row.answer_status === null ? null : { status: row.answer_status, body: row.answer_json },
  authorization:
    row.auth_nonce === null || row.auth_expiration_ledger === null
      ? null
      : { nonce: row.auth_nonce, expirationLedger: row.auth_expiration_ledger },
  createdAtMs: row.created_at_ms,
  updatedAtMs: row.updated_at_ms
})

export const decodeJournal = decodeRows(JournalRow)
export const decodeIds = decodeRows(Schema.Struct({ id: SettlementId }))

const TransitionRow = Schema.Struct({
  from_state: Schema.NullOr(SettlementState),
  to_state: SettlementState,
  reason: Schema.String,
  at_ms: SqlNumber
})
export const decodeTransitions = decodeRows(TransitionRow)

const UsageRow = Schema.Struct({
  spend: Schema.NullOr(SqlBigInt),
  global_fee: Schema.NullOr(SqlBigInt),
  principal_fee: Schema.NullOr(SqlBigInt),
  oldest_global: Schema.NullOr(SqlNumber),
  oldest_principal: Schema.NullOr(SqlNumber)
})
export const decodeUsage = decodeRows(UsageRow)

/** Stores one change of an entry's state; every write of a state goes through here too. */
export const transition = (
  sql: SqlClient.SqlClient,
  id: SettlementId,
  from: SettlementTransition["from"],
  to: SettlementTransition["to"],
  reason: string,
  atMs: number
) =>
  sql`INSERT INTO settlement_transitions (id, settlement_id, from_state, to_state, reason, at_ms)
    VALUES (${sortableId("st", atMs)}, ${id}, ${from}, ${to}, ${reason}, ${atMs})`
