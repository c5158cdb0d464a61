import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Evidence: probe observations, the per-resource metrics row kept current as they arrive, status
 * transitions and economic events. Times are stored twice: ISO text to return as recorded, and
 * epoch milliseconds to compare and index. Portable SQL (SQLite and Postgres).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE observations (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    observed_at TEXT NOT NULL,
    observed_at_ms BIGINT NOT NULL,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    http_status INTEGER,
    latency_ms INTEGER,
    outcome TEXT NOT NULL,
    x402_version INTEGER,
    scheme TEXT,
    network TEXT,
    asset TEXT,
    pay_to TEXT,
    amount TEXT,
    max_amount TEXT,
    price_usd DOUBLE PRECISION,
    detail TEXT,
    contradiction TEXT
  )`
  yield* sql`CREATE INDEX observations_resource_time ON observations(resource_id, observed_at_ms)`
  yield* sql`CREATE INDEX observations_time ON observations(observed_at_ms)`
  yield* sql`CREATE TABLE resource_metrics (
    resource_id TEXT PRIMARY KEY REFERENCES resources(id) ON DELETE CASCADE,
    availability DOUBLE PRECISION NOT NULL,
    payment_interface_success_rate DOUBLE PRECISION NOT NULL,
    transaction_success_rate DOUBLE PRECISION NOT NULL,
    p50_latency_ms INTEGER,
    p95_latency_ms INTEGER,
    observed_price_usd DOUBLE PRECISION,
    price_consistency DOUBLE PRECISION NOT NULL,
    reliability DOUBLE PRECISION NOT NULL,
    observation_count INTEGER NOT NULL,
    last_verified TEXT,
    last_observed_at TEXT,
    valid_challenge_seen INTEGER NOT NULL,
    transaction_verified INTEGER NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* sql`CREATE TABLE status_transitions (
    id TEXT PRIMARY KEY,
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    from_status TEXT NOT NULL,
    to_status TEXT NOT NULL,
    from_level INTEGER NOT NULL,
    to_level INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX status_transitions_resource_time ON status_transitions(resource_id, at_ms)`
  yield* sql`CREATE TABLE economic_events (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    resource_id TEXT,
    pay_to TEXT,
    success INTEGER NOT NULL,
    transaction_hash TEXT,
    at TEXT NOT NULL,
    at_ms BIGINT NOT NULL
  )`
  yield* sql`CREATE INDEX economic_events_resource_time ON economic_events(resource_id, at_ms)`
  yield* sql`CREATE INDEX economic_events_pay_to_time ON economic_events(pay_to, at_ms)`
})
