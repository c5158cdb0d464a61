import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type {
  EconomicEvent,
  EconomicEvidence,
  EconomicSource,
  EconomicState,
  ExpectedTransfer,
  ProbeDetail
} from "../domain/evidence.js"
import { ResourceId } from "../domain/ids.js"
import { decodeRows, repository, SqlNumber } from "./repository.js"

/** What EconomicEventsRepo offers. */
export interface EconomicEventsRepoShape {
  readonly insert: (id: string, e: EconomicEvent, initial: EventResolution, nowMs: number) => Effect.Effect<void>
  readonly summary: (
    resourceId: ResourceId,
    payTos: ReadonlyArray<string>,
    sinceMs: number,
    minPayers: number
  ) => Effect.Effect<PaymentSummary>
  /**
   * Another resource a transaction already counts for: an event with this hash, not rejected,
   * naming a resource other than `resourceId`. One transaction is evidence about one resource.
   */
  readonly claimedElsewhere: (transactionHash: string, resourceId: ResourceId | null) => Effect.Effect<string | null>
  /**
   * `summary` of many resources at once: one query finds which of them any event is about, and
   * only those (few: most resources are never paid through this service) get their own summary.
   */
  readonly summaries: (
    about: ReadonlyArray<{ readonly resourceId: ResourceId; readonly payTos: ReadonlyArray<string> }>,
    sinceMs: number,
    minPayers: number
  ) => Effect.Effect<Map<string, PaymentSummary>>
  /** Pending events due for a ledger check, oldest first. */
  readonly due: (nowMs: number, limit: number) => Effect.Effect<Array<PendingEvent>>
  /** Moves a pending event on; a no-op for one already settled. */
  readonly resolve: (id: string, resolution: EventResolution, nowMs: number) => Effect.Effect<void>
  /** The newest events about a resource, newest first, as shown with it. */
  readonly recent: (
    resourceId: ResourceId,
    payTos: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<Array<EconomicEvidence>>
  /** The first event `source` stored for a transaction (read through the transaction index), if any. */
  readonly reported: (source: EconomicSource, transactionHash: string) => Effect.Effect<Option.Option<EconomicEvidence>>
}

export class EconomicEventsRepo extends Context.Tag("sextant/EconomicEventsRepo")<
  EconomicEventsRepo,
  EconomicEventsRepoShape
>() {
  static readonly Live = Layer.suspend(() => Layer.effect(EconomicEventsRepo, make))
}

const SummaryRow = Schema.Struct({
  failures: Schema.NullOr(SqlNumber),
  successes: Schema.NullOr(SqlNumber),
  ever: Schema.NullOr(SqlNumber),
  window_payers: Schema.NullOr(SqlNumber),
  window_probe: Schema.NullOr(SqlNumber),
  payers: Schema.NullOr(SqlNumber),
  probe: Schema.NullOr(SqlNumber)
})
const decodeSummary = decodeRows(SummaryRow)

/** What the payments about a resource show: the transaction success rate's terms and level 3 evidence. */
export interface PaymentSummary {
  readonly total: number
  readonly successes: number
  readonly everSucceeded: boolean
}

const NO_PAYMENTS: PaymentSummary = { total: 0, successes: 0, everSucceeded: false }

/**
 * The payments that count (docs/trust.md): confirmed ones only once `minPayers` distinct payers
 * made them (settles and receipts), or one of the operator's own economic probes did; in the
 * window for the success rate, ever for level 3. Observed failures always count. No I/O.
 */
export const countedPayments = (row: typeof SummaryRow.Type | undefined, minPayers: number): PaymentSummary => {
  const enough = (payers: number | null, probe: number | null) => probe === 1 || (payers ?? 0) >= minPayers
  const successes = enough(row?.window_payers ?? null, row?.window_probe ?? null) ? (row?.successes ?? 0) : 0
  return {
    total: successes + (row?.failures ?? 0),
    successes,
    everSucceeded: row?.ever === 1 && enough(row.payers, row.probe)
  }
}

const ProbeJson = Schema.parseJson(
  Schema.Struct({
    priceUsd: Schema.Number,
    settleLatencyMs: Schema.Number,
    httpStatus: Schema.Number,
    bodyMatchesType: Schema.Boolean
  })
)

const EventRow = Schema.Struct({
  id: Schema.String,
  source: Schema.Literal("settlement", "receipt", "probe", "outcome"),
  resource_id: Schema.NullOr(ResourceId),
  pay_to: Schema.NullOr(Schema.String),
  success: SqlNumber,
  transaction_hash: Schema.NullOr(Schema.String),
  at: Schema.String,
  state: Schema.Literal("pending", "confirmed", "rejected", "failed"),
  state_reason: Schema.NullOr(Schema.String),
  state_changed_at: Schema.NullOr(Schema.String),
  payer: Schema.NullOr(Schema.String),
  expected_pay_to: Schema.NullOr(Schema.String),
  expected_amount: Schema.NullOr(Schema.String),
  expected_scheme: Schema.NullOr(Schema.Literal("exact", "upto")),
  probe_json: Schema.NullOr(ProbeJson),
  ledger: Schema.NullOr(SqlNumber)
})
type EventRow = typeof EventRow.Type
const decodeEvents = decodeRows(EventRow)

/** A stored event still to be checked against the ledger. */
export interface PendingEvent {
  readonly id: string
  readonly resourceId: ResourceId | null
  readonly payTo: string | null
  readonly transactionHash: string
  readonly at: string
  readonly payer: string | null
  readonly expected: ExpectedTransfer
}

/** How an event's state changes. */
export interface EventResolution {
  readonly state: EconomicState
  readonly reason: string | null
  readonly ledger: number | null
  /** When a still-pending event is looked at again; null once it is settled. */
  readonly nextCheckMs: number | null
  /** The payer the ledger showed, stored when the event named none (a receipt). */
  readonly payer?: string
}

const toPublic = (row: EventRow): EconomicEvidence => ({
  id: row.id,
  source: row.source,
  state: row.state,
  reason: row.state_reason,
  transactionHash: row.transaction_hash,
  payTo: row.pay_to ?? row.expected_pay_to,
  at: row.at,
  stateChangedAt: row.state_changed_at,
  ledger: row.ledger,
  ...(row.probe_json !== null ? { probe: row.probe_json as ProbeDetail } : {})
})

const toPending = (row: EventRow): ReadonlyArray<PendingEvent> =>
  row.transaction_hash === null ||
  row.expected_pay_to === null ||
  row.expected_amount === null ||
  row.expected_scheme === null
    ? []
    : [
        {
          id: row.id,
          resourceId: row.resource_id,
          payTo: row.pay_to,
          transactionHash: row.transaction_hash,
          at: row.at,
          payer: row.payer,
          expected: { payTo: row.expected_pay_to, amount: row.expected_amount, scheme: row.expected_scheme }
        }
      ]

const make = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient

  /** Events about a resource: named by id, or naming none but paying one of its payees. */
  const about = (resourceId: ResourceId, payTos: ReadonlyArray<string>) =>
    payTos.length === 0
      ? sql`resource_id = ${resourceId}`
      : sql`(resource_id = ${resourceId} OR (resource_id IS NULL AND ${sql.in("pay_to", payTos)}))`

  /**
   * Events that count for a resource: named by id, or naming none and paying a payee that this is
   * the one listed resource of. One transaction counts for one resource: a settle that named no
   * resource is no evidence about each of a payee's many.
   */
  const countedFor = (resourceId: ResourceId, payTos: ReadonlyArray<string>) =>
    payTos.length === 0
      ? sql`resource_id = ${resourceId}`
      : sql`(resource_id = ${resourceId} OR (resource_id IS NULL AND ${sql.in("pay_to", payTos)}
          AND NOT EXISTS (SELECT 1 FROM payment_options po JOIN resources pr ON pr.id = po.resource_id
               WHERE po.pay_to = economic_events.pay_to AND po.resource_id <> ${resourceId} AND pr.listed = 1)))`

  /**
   * Payments about the resource since `sinceMs`: confirmed transactions (each counted once, however
   * many reports name it: a settle answer and the buyer's receipt of it are one payment) and
   * observed failures, which make the transaction success rate; and whether any transaction was
   * ever confirmed (level 3 evidence), each only from enough distinct payers (countedPayments).
   * Pending and rejected events do not count. One query.
   */
  const summary = (resourceId: ResourceId, payTos: ReadonlyArray<string>, sinceMs: number, minPayers: number) =>
    sql`
      SELECT COUNT(DISTINCT CASE WHEN at_ms >= ${sinceMs} AND state = 'confirmed' THEN transaction_hash END) AS successes,
             SUM(CASE WHEN at_ms >= ${sinceMs} AND state = 'failed' THEN 1 ELSE 0 END) AS failures,
             MAX(CASE WHEN state = 'confirmed' THEN 1 ELSE 0 END) AS ever,
             COUNT(DISTINCT CASE WHEN at_ms >= ${sinceMs} AND state = 'confirmed' AND source <> 'probe' THEN payer END) AS window_payers,
             MAX(CASE WHEN at_ms >= ${sinceMs} AND state = 'confirmed' AND source = 'probe' THEN 1 ELSE 0 END) AS window_probe,
             COUNT(DISTINCT CASE WHEN state = 'confirmed' AND source <> 'probe' THEN payer END) AS payers,
             MAX(CASE WHEN state = 'confirmed' AND source = 'probe' THEN 1 ELSE 0 END) AS probe
      FROM economic_events WHERE ${countedFor(resourceId, payTos)}`.pipe(
      Effect.flatMap(decodeSummary),
      Effect.map(([row]) => countedPayments(row, minPayers))
    )

  return repository("EconomicEventsRepo", {
    insert: (id: string, e: EconomicEvent, initial: EventResolution, nowMs: number) =>
      sql`INSERT INTO economic_events (id, source, resource_id, pay_to, success, transaction_hash, at, at_ms, state,
          state_reason, state_changed_at, payer, expected_pay_to, expected_amount, expected_scheme, probe_json, ledger,
          next_check_ms)
        VALUES (${id}, ${e.source}, ${e.resourceId}, ${e.payTo}, ${e.success ? 1 : 0}, ${e.transactionHash}, ${e.at},
          ${Date.parse(e.at)}, ${initial.state}, ${initial.reason}, ${new Date(nowMs).toISOString()}, ${e.payer},
          ${e.expected?.payTo ?? null}, ${e.expected?.amount ?? null}, ${e.expected?.scheme ?? null},
          ${e.probe === undefined ? null : JSON.stringify(e.probe)}, ${initial.ledger}, ${initial.nextCheckMs})`.pipe(
        Effect.asVoid
      ),

    summary,

    claimedElsewhere: (transactionHash: string, resourceId: ResourceId | null) =>
      sql<{ resource_id: string }>`SELECT resource_id FROM economic_events
        WHERE transaction_hash = ${transactionHash} AND state <> 'rejected' AND resource_id IS NOT NULL
          ${resourceId === null ? sql`` : sql`AND resource_id <> ${resourceId}`}
        LIMIT 1`.pipe(Effect.map((rows) => rows[0]?.resource_id ?? null)),

    summaries: (
      about: ReadonlyArray<{ readonly resourceId: ResourceId; readonly payTos: ReadonlyArray<string> }>,
      sinceMs: number,
      minPayers: number
    ) =>
      Effect.gen(function* () {
        const result = new Map<string, PaymentSummary>()
        if (about.length === 0) return result
        const payTos = [...new Set(about.flatMap((a) => a.payTos))]
        const found = yield* sql<{ resource_id: string | null; pay_to: string | null }>`
          SELECT DISTINCT resource_id, pay_to FROM economic_events
          WHERE ${sql.in(
            "resource_id",
            about.map((a) => a.resourceId)
          )}
            ${payTos.length === 0 ? sql`` : sql`OR (resource_id IS NULL AND ${sql.in("pay_to", payTos)})`}`
        const ids = new Set(found.flatMap((r) => (r.resource_id === null ? [] : [r.resource_id])))
        const paid = new Set(found.flatMap((r) => (r.resource_id === null && r.pay_to !== null ? [r.pay_to] : [])))
        for (const a of about) {
          const any = ids.has(a.resourceId) || a.payTos.some((p) => paid.has(p))
          result.set(a.resourceId, any ? yield* summary(a.resourceId, a.payTos, sinceMs, minPayers) : NO_PAYMENTS)
        }
        return result
      }),

    due: (nowMs: number, limit: number) =>
      sql`SELECT * FROM economic_events WHERE state = 'pending' AND next_check_ms <= ${nowMs}
        ORDER BY next_check_ms, id LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeEvents),
        Effect.map((rows) => rows.flatMap(toPending))
      ),

    resolve: (id: string, resolution: EventResolution, nowMs: number) =>
      sql`UPDATE economic_events SET state = ${resolution.state}, state_reason = ${resolution.reason},
          ledger = ${resolution.ledger}, next_check_ms = ${resolution.nextCheckMs}, payer = COALESCE(payer, ${resolution.payer ?? null}),
          state_changed_at = CASE WHEN state = ${resolution.state} THEN state_changed_at ELSE ${new Date(nowMs).toISOString()} END
        WHERE id = ${id} AND state = 'pending'`.pipe(Effect.asVoid),

    recent: (resourceId: ResourceId, payTos: ReadonlyArray<string>, limit: number) =>
      sql`SELECT * FROM economic_events WHERE ${about(resourceId, payTos)} ORDER BY at_ms DESC, id DESC LIMIT ${limit}`.pipe(
        Effect.flatMap(decodeEvents),
        Effect.map((rows) => rows.map(toPublic))
      ),

    reported: (source: EconomicSource, transactionHash: string) =>
      sql`SELECT * FROM economic_events WHERE transaction_hash = ${transactionHash} AND source = ${source} ORDER BY id LIMIT 1`.pipe(
        Effect.flatMap(decodeEvents),
        Effect.map((rows) => Option.fromNullable(rows[0]).pipe(Option.map(toPublic)))
      )
  })
})
