import { Schema } from "effect"

/**
 * Any JSON value, passed through as it came. Described by the list of JSON types: Effect's default
 * for Unknown carries an `$id` that a nested schema may not repeat (and a validator refuses).
 */
export const AnyJson = Schema.Unknown.annotations({
  jsonSchema: { type: ["string", "number", "boolean", "object", "array", "null"] }
})

/** A JSON object whose members are kept as they came. */
export const JsonObject = Schema.Record({ key: Schema.String, value: AnyJson })
