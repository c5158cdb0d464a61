import { Schema } from "effect"

/**
 * Any JSON value, passed through as it came. Described as `{}` (any) in JSON Schema: Effect's
 * default for Unknown carries an `$id` that a nested schema may not repeat.
 */
export const AnyJson = Schema.Unknown.annotations({ jsonSchema: {} })

/** A JSON object whose members are kept as they came. */
export const JsonObject = Schema.Record({ key: Schema.String, value: AnyJson })
