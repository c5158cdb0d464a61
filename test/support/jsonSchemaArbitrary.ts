import { FastCheck as fc } from "effect"

/**
 * Values a JSON Schema (2020-12, the subset an OpenAPI 3.1 document derived from Effect Schema
 * uses) accepts, for fuzzing a server with requests its own document allows. `$ref`s resolve
 * against `root`; arrays are kept short and recursion shallow so a request stays small. A value
 * it cannot make exactly (two constraints it does not combine) is caught by validating it
 * against the same schema before it is sent.
 */
export const fromJsonSchema = (root: unknown, schema: any, depth = 0): fc.Arbitrary<unknown> => {
  const recurse = (s: any) => fromJsonSchema(root, s, depth + 1)
  if (schema === true || schema === undefined || schema === null || Object.keys(schema).length === 0)
    return fc.jsonValue({ maxDepth: 1 })
  if (typeof schema.$ref === "string") {
    const target = schema.$ref
      .replace(/^#\//, "")
      .split("/")
      .reduce((node: any, key: string) => node?.[key.replace(/~1/g, "/").replace(/~0/g, "~")], root)
    const { $ref: _ref, ...siblings } = schema
    return recurse({ ...target, ...siblings })
  }
  if ("const" in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (Array.isArray(alternatives)) {
    const { anyOf: _a, oneOf: _o, ...rest } = schema
    return fc.oneof(...alternatives.map((alternative: any) => recurse({ ...rest, ...alternative })))
  }
  if (Array.isArray(schema.allOf)) {
    const { allOf, ...rest } = schema
    return recurse(Object.assign({}, rest, ...allOf))
  }
  if (Array.isArray(schema.type)) return fc.oneof(...schema.type.map((type: string) => recurse({ ...schema, type })))
  switch (schema.type) {
    case "null":
      return fc.constant(null)
    case "boolean":
      return fc.boolean()
    case "integer":
      return integers(schema)
    case "number":
      return numbers(schema)
    case "string":
      return strings(schema)
    case "array": {
      const minLength = schema.minItems ?? 0
      const maxLength = Math.max(minLength, Math.min(schema.maxItems ?? 3, depth > 3 ? minLength : 3))
      return fc.array(recurse(schema.items ?? {}), { minLength, maxLength })
    }
    case "object":
      return objects(root, schema, depth)
    default:
      return schema.properties !== undefined ? objects(root, schema, depth) : fc.jsonValue({ maxDepth: 1 })
  }
}

/** Where a schema names no bound, JSON allows any integer: beyond 2^53 too, where a server's own integers stop. */
const UNBOUNDED = 2 ** 60

const integers = (schema: any): fc.Arbitrary<number> => {
  const min = Math.max(
    schema.minimum ?? -UNBOUNDED,
    schema.exclusiveMinimum === undefined ? -Infinity : schema.exclusiveMinimum + 1
  )
  const max = Math.min(
    schema.maximum ?? UNBOUNDED,
    schema.exclusiveMaximum === undefined ? Infinity : schema.exclusiveMaximum - 1
  )
  // The bounds themselves, small values and huge ones are where servers draw their lines.
  const small = fc.integer({ min: Math.max(min, -1000), max: Math.max(Math.min(max, 1000), Math.max(min, -1000)) })
  const anywhere = fc
    .maxSafeNat()
    .map((n) => Math.min(max, min + (n % (max - min + 1)) * (max - min > Number.MAX_SAFE_INTEGER ? 256 : 1)))
  return fc.oneof(fc.constantFrom(min, max), small, anywhere)
}

const numbers = (schema: any): fc.Arbitrary<number> => {
  const min = schema.minimum ?? schema.exclusiveMinimum ?? -1e12
  const max = schema.maximum ?? schema.exclusiveMaximum ?? 1e12
  return fc
    .double({ min, max, noNaN: true, noDefaultInfinity: true })
    .filter(
      (n) =>
        (schema.exclusiveMinimum === undefined || n > schema.exclusiveMinimum) &&
        (schema.exclusiveMaximum === undefined || n < schema.exclusiveMaximum)
    )
}

const FORMATS: Record<string, fc.Arbitrary<string>> = {
  "date-time": fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString()),
  uri: fc.webUrl(),
  email: fc.emailAddress(),
  uuid: fc.uuid()
}

const strings = (schema: any): fc.Arbitrary<string> => {
  const format = typeof schema.format === "string" ? FORMATS[schema.format] : undefined
  if (format !== undefined) return format
  const minLength = schema.minLength ?? 0
  const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 40, 60))
  if (typeof schema.pattern === "string") {
    const pattern = new RegExp(schema.pattern)
    return fc.stringMatching(pattern).filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? Infinity))
  }
  return fc.string({ minLength, maxLength })
}

const objects = (root: unknown, schema: any, depth: number): fc.Arbitrary<unknown> => {
  const properties: Record<string, any> = schema.properties ?? {}
  const required = new Set<string>(schema.required ?? [])
  const fields = Object.fromEntries(
    Object.entries(properties)
      // Deep down, optional fields are left out, so recursive shapes end.
      .filter(([name]) => required.has(name) || depth < 4)
      .map(([name, property]) => {
        const value = fromJsonSchema(root, property, depth + 1)
        return [name, required.has(name) ? value : fc.option(value, { nil: undefined })]
      })
  )
  return fc.record(fields).map((value) => Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)))
}
