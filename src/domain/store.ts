import { Schema } from "effect"

/** What `/health/dependencies` reports about the store: kind, location and durability. */
export const StoreInfo = Schema.Struct({
  kind: Schema.Literal("sqlite", "postgres"),
  location: Schema.String,
  journalMode: Schema.NullOr(Schema.String),
  synchronous: Schema.NullOr(Schema.String),
  durable: Schema.Boolean
}).annotations({ identifier: "StoreInfo" })
export type StoreInfo = typeof StoreInfo.Type
