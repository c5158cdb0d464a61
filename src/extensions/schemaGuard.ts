import { Data } from "effect"
import { isObject } from "../domain/isObject.js"
import { isTaggedAs } from "../domain/tagged.js"
/**
 * What an untrusted JSON Schema (a payer's bazaar extension) may contain before this service
 * compiles it. A schema is code for a validator: a regular expression can backtrack for ever and
 * cannot be interrupted, and `$ref`s that fan out (each level two references to the next) double
 * the work per level, so 40 levels in 3 KB never finish. The guard reads the schema once, in time
 * bounded by MAX_EXPANDED_NODES, and refuses:
 * - any keyword outside ALLOWED_KEYWORDS, at any depth (so `pattern`, `patternProperties`,
 *   `dependencies`, `dependentSchemas`, `$id`, `$anchor`, `$dynamicRef`, `unevaluated*`,
 *   `content*` and unknown keywords; `format` is kept: Ajv's "fast" formats are linear, and the
 *   time budget bounds them anyway);
 * - a `$ref` that is not a JSON pointer into the schema itself (`#` or `#/...`), one that does not
 *   resolve, or one that leads back to a schema it is inside (a cycle);
 * - a schema whose subschemas, with every `$ref` expanded, number more than MAX_EXPANDED_NODES, or
 *   that nests deeper than MAX_DEPTH;
 * - a schema or an `info` larger than 16 KiB.
 * What passes is still validated off the request thread under a time budget (SchemaValidator).
 * Pure: no I/O.
 */

export const MAX_SCHEMA_BYTES = 16 * 1024
export const MAX_INFO_BYTES = 16 * 1024
export const MAX_EXPANDED_NODES = 1_000
export const MAX_DEPTH = 32

/** Keywords whose value is one subschema. */
const ONE = new Set(["items", "not", "if", "then", "else", "contains", "additionalProperties", "propertyNames"])
/** Keywords whose value is a list of subschemas. */
const MANY = new Set(["allOf", "anyOf", "oneOf", "prefixItems"])
/** Keywords whose value maps names to subschemas. */
const BY_NAME = new Set(["properties", "$defs", "definitions"])
/** Keywords whose value is data, not a schema: never walked. */
const DATA = new Set([
  "$schema",
  "$comment",
  "title",
  "description",
  "default",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
  "type",
  "enum",
  "const",
  "multipleOf",
  "maximum",
  "exclusiveMaximum",
  "minimum",
  "exclusiveMinimum",
  "maxLength",
  "minLength",
  "maxItems",
  "minItems",
  "uniqueItems",
  "maxContains",
  "minContains",
  "maxProperties",
  "minProperties",
  "required",
  "dependentRequired",
  "format"
])

/** Every keyword an untrusted schema may use (Draft 2020-12 names, plus `definitions`). */
export const ALLOWED_KEYWORDS: ReadonlySet<string> = new Set([...ONE, ...MANY, ...BY_NAME, ...DATA, "$ref"])

/** The subschema a local `$ref` names (`#`, `#/$defs/a`, with `~0`, `~1` and percent escapes), or undefined. */
const resolvePointer = (root: unknown, ref: string): unknown => {
  if (ref === "#") return root
  if (!ref.startsWith("#/")) return undefined
  let node: unknown = root
  for (const raw of ref.slice(2).split("/")) {
    let token: string
    try {
      token = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~")
    } catch {
      return undefined
    }
    if (Array.isArray(node) && /^(0|[1-9]\d*)$/.test(token)) node = node[Number(token)]
    else if (isObject(node) && Object.hasOwn(node, token)) node = node[token]
    else return undefined
  }
  return node
}

/** Thrown out of the walk at the first refusal; told from any other throw by its tag. */
class SchemaRefused extends Data.TaggedError("SchemaRefused")<{ readonly reason: string }> {}

const refuse = (reason: string) => new SchemaRefused({ reason })

/**
 * Why this schema (for this `info`) is not evaluated, or null when it may be. Sizes are checked
 * first, so the walk itself only ever reads 16 KiB.
 */
export const schemaRefusal = (schema: unknown, info: unknown): string | null => {
  if (!isObject(schema) && typeof schema !== "boolean") return "schema must be a JSON Schema object"
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) return `schema is larger than ${MAX_SCHEMA_BYTES} bytes`
  if ((JSON.stringify(info) ?? "").length > MAX_INFO_BYTES) return `info is larger than ${MAX_INFO_BYTES} bytes`
  let expanded = 0
  /** `inside`: the `$ref` targets being expanded on the way here, to find cycles. */
  const walk = (node: unknown, path: string, depth: number, inside: ReadonlySet<unknown>): void => {
    if (typeof node === "boolean") return
    if (!isObject(node)) throw refuse(`${path}: a subschema must be an object or a boolean`)
    if (++expanded > MAX_EXPANDED_NODES)
      throw refuse(
        `schema expands to more than ${MAX_EXPANDED_NODES} subschemas (references counted each time they are used)`
      )
    if (depth > MAX_DEPTH) throw refuse(`${path}: nested deeper than ${MAX_DEPTH} levels`)
    for (const [key, value] of Object.entries(node)) {
      const at = `${path}/${key}`
      if (!ALLOWED_KEYWORDS.has(key))
        throw refuse(`${at}: "${key}" is not among the keywords evaluated for untrusted schemas`)
      if (key === "$ref") {
        if (typeof value !== "string" || !value.startsWith("#"))
          throw refuse(`${at}: only local references (#...) are resolved; remote schemas are never fetched`)
        const target = resolvePointer(schema, value)
        if (target === undefined) throw refuse(`${at}: "${value}" does not resolve inside the schema`)
        if (inside.has(target)) throw refuse(`${at}: "${value}" refers back to a schema it is inside (a cycle)`)
        walk(target, `schema${value.slice(1)}`, depth + 1, new Set([...inside, target]))
      } else if (ONE.has(key)) {
        walk(value, at, depth + 1, inside)
      } else if (MANY.has(key)) {
        if (!Array.isArray(value)) throw refuse(`${at}: expected a list of subschemas`)
        value.forEach((v, i) => walk(v, `${at}/${i}`, depth + 1, inside))
      } else if (BY_NAME.has(key)) {
        if (!isObject(value)) throw refuse(`${at}: expected an object of subschemas`)
        for (const [name, v] of Object.entries(value)) walk(v, `${at}/${name}`, depth + 1, inside)
      }
    }
  }
  try {
    walk(schema, "schema", 0, new Set([schema]))
    return null
  } catch (e) {
    if (isTaggedAs<SchemaRefused>(e, "SchemaRefused")) return e.reason
    throw e
  }
}
