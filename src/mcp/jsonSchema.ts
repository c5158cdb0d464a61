import { JSONSchema, type Schema } from "effect"

type Json = { [key: string]: unknown }

/**
 * Effect marks `unknown` and `object` members with `$id: "/schemas/unknown"` etc. at each use;
 * validators (ajv, which the MCP client runs on outputs) refuse an `$id` seen twice.
 */
const withoutIds = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(withoutIds)
    : typeof value === "object" && value !== null
      ? Object.fromEntries(
          Object.entries(value)
            .filter(([k]) => k !== "$id")
            .map(([k, v]) => [k, withoutIds(v)])
        )
      : value

/**
 * MCP wants `{type: "object", ...}` at the top of tool schemas, while Effect's JSONSchema.make
 * answers `{$ref: "#/$defs/Name", $defs}` for an identified schema: the referenced definition is
 * lifted to the top, the other definitions kept beside it.
 */
export const toolJsonSchema = (schema: Schema.Schema.Any): Json & { type: "object" } => {
  const {
    $schema: _ignored,
    $ref,
    $defs,
    ...rest
  } = withoutIds(JSONSchema.make(schema)) as Json & {
    $ref?: string
    $defs?: Record<string, Json>
  }
  const name = typeof $ref === "string" ? $ref.replace("#/$defs/", "") : undefined
  const top = name !== undefined && $defs?.[name] ? $defs[name] : rest
  return { ...top, ...($defs ? { $defs } : {}), type: "object" }
}
