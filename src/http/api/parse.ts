import type { Schema } from "effect"

/**
 * Request bodies report every failing field and reject unknown ones (HttpApi defaults to the first
 * issue and silently drops extras, NOTES.md).
 */
export const strict = <S extends Schema.Schema.Any>(schema: S): S =>
  schema.annotations({ parseOptions: { errors: "all", onExcessProperty: "error" } }) as S
