import type { Schema } from "effect"

/**
 * Request bodies report every failing field and reject unknown ones (HttpApi defaults to the first
 * issue and silently drops extras, NOTES.md).
 */
export const strict = <S extends Schema.Schema.Any>(schema: S): S =>
  schema.annotations({ parseOptions: { errors: "all", onExcessProperty: "error" } }) as S

/**
 * Every issue reported, unknown fields kept: for stock x402 bodies, which are forwarded as the
 * buyer signed them (a newer client's extra fields must reach the facilitator), and for query
 * strings, where clients add their own parameters.
 */
export const allIssues = <S extends Schema.Schema.Any>(schema: S): S =>
  schema.annotations({ parseOptions: { errors: "all" } }) as S
