import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Catalog rows: providers, resources, their capabilities and payment options. Portable SQL (SQLite and Postgres). */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE providers (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    url TEXT,
    contact TEXT
  )`
  yield* sql`CREATE TABLE resources (
    id TEXT PRIMARY KEY,
    provider_id TEXT NOT NULL REFERENCES providers(id),
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    url TEXT NOT NULL,
    method TEXT NOT NULL,
    status TEXT NOT NULL,
    verification_level INTEGER NOT NULL,
    source TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX resources_url ON resources(url)`
  yield* sql`CREATE TABLE resource_capabilities (
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    capability TEXT NOT NULL,
    PRIMARY KEY (resource_id, capability)
  )`
  yield* sql`CREATE INDEX resource_capabilities_capability ON resource_capabilities(capability)`
  yield* sql`CREATE TABLE payment_options (
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    option_index INTEGER NOT NULL,
    network TEXT NOT NULL,
    scheme TEXT NOT NULL,
    asset TEXT NOT NULL,
    amount TEXT NOT NULL,
    amount_usd DOUBLE PRECISION NOT NULL,
    max_amount TEXT,
    max_amount_usd DOUBLE PRECISION,
    pay_to TEXT NOT NULL,
    PRIMARY KEY (resource_id, option_index)
  )`
  yield* sql`CREATE INDEX payment_options_pay_to ON payment_options(pay_to)`
})
