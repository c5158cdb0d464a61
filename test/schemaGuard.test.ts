import { describe, expect, test } from "bun:test"
import { Effect, Either } from "effect"
import { SchemaValidator, schemaHash } from "../src/extensions/SchemaValidator.js"
import { ALLOWED_KEYWORDS, MAX_EXPANDED_NODES, schemaRefusal } from "../src/extensions/schemaGuard.js"
import { it } from "./support/effectTest.js"

/** `levels` definitions, each referring to the next `fanOut` times: fanOut^levels paths in a few KB. */
const fanned = (levels: number, fanOut: number) => ({
  type: "object",
  $defs: Object.fromEntries(
    Array.from({ length: levels }, (_, i) => [
      `d${i}`,
      i === levels - 1
        ? { type: "string" }
        : { anyOf: Array.from({ length: fanOut }, () => ({ $ref: `#/$defs/d${i + 1}` })) }
    ])
  ),
  properties: { input: { $ref: "#/$defs/d0" } }
})

describe("schema guard (pure)", () => {
  test("the allow-list: no regex, dependency, dynamic-scope or id keyword is allowed", () => {
    for (const keyword of [
      "pattern",
      "patternProperties",
      "dependencies",
      "dependentSchemas",
      "$id",
      "$anchor",
      "$dynamicRef",
      "$dynamicAnchor",
      "$recursiveRef",
      "unevaluatedProperties",
      "unevaluatedItems",
      "contentSchema",
      "additionalItems"
    ]) {
      expect(ALLOWED_KEYWORDS.has(keyword)).toBe(false)
    }
  })

  test("a refused keyword is found at any depth, under any applicator", () => {
    const regex = { pattern: "^(a+)+$" }
    const places = [
      { properties: { a: regex } },
      { items: { anyOf: [true, regex] } },
      { $defs: { unused: regex } },
      // biome-ignore lint/suspicious/noThenProperty: `then` is a JSON Schema keyword here, not a thenable
      { not: { not: { if: true, then: { prefixItems: [regex] } } } },
      { additionalProperties: { propertyNames: regex } }
    ]
    for (const schema of places) expect(schemaRefusal(schema, {})).toContain('"pattern" is not among the keywords')
    // A property named like a keyword is a name, not a keyword.
    expect(
      schemaRefusal(
        { type: "object", properties: { pattern: { type: "string" }, dependencies: { type: "array" } } },
        {}
      )
    ).toBeNull()
  })

  test("references: local only, resolving, no cycles, fan-out bounded", () => {
    expect(schemaRefusal({ $ref: "other.json" }, {})).toContain("only local references")
    expect(schemaRefusal({ $ref: "#/$defs/missing" }, {})).toContain("does not resolve")
    expect(schemaRefusal({ $defs: { a: { items: { $ref: "#/$defs/a" } } }, $ref: "#/$defs/a" }, {})).toContain(
      "a cycle"
    )
    expect(schemaRefusal({ properties: { self: { $ref: "#" } } }, {})).toContain("a cycle")
    // The same definition used twice, not inside itself: fine.
    expect(
      schemaRefusal(
        { $defs: { s: { type: "string" } }, properties: { a: { $ref: "#/$defs/s" }, b: { $ref: "#/$defs/s" } } },
        {}
      )
    ).toBeNull()
    expect(schemaRefusal(fanned(5, 2), {})).toBeNull()
    expect(schemaRefusal(fanned(12, 2), {})).toContain(`expands to more than ${MAX_EXPANDED_NODES} subschemas`)
    expect(schemaRefusal(fanned(40, 2), {})).toMatch(/expands to more than|nested deeper than/)
  })

  test("the guard's own cost is bounded: a 16 KiB fan-out schema is judged in milliseconds", () => {
    const schema = fanned(60, 20)
    const started = performance.now()
    expect(schemaRefusal(schema, {})).not.toBeNull()
    expect(performance.now() - started).toBeLessThan(50)
  })

  test("compiled validators are cached by a hash of the canonical schema: key order does not matter", () => {
    expect(schemaHash({ type: "object", required: ["a"] })).toBe(schemaHash({ required: ["a"], type: "object" }))
    expect(schemaHash({ type: "object" })).not.toBe(schemaHash({ type: "array" }))
  })
})

describe("SchemaValidator (a Bun Worker under a time budget)", () => {
  it.live("validates, reports the first failure, and a compile error", () =>
    Effect.gen(function* () {
      const v = yield* SchemaValidator
      const results = yield* Effect.all([
        v.validate({ a: "x" }, { type: "object", properties: { a: { type: "string" } } }),
        v.validate({ a: 1 }, { type: "object", properties: { a: { type: "string" } } }),
        v.validate({}, { type: "strin" })
      ])
      expect(Either.isRight(results[0])).toBe(true)
      expect(Either.isLeft(results[1]) && results[1].left).toBe("info failed schema validation: /a must be string")
      expect(Either.isLeft(results[2]) && results[2].left).toStartWith("schema could not be compiled")
    }).pipe(Effect.provide(SchemaValidator.layer(2_000)))
  )

  it.live("a validation over the budget answers at the budget, and the next one runs on a fresh worker", () =>
    Effect.gen(function* () {
      const v = yield* SchemaValidator
      const slow = { allOf: Array.from({ length: 200 }, () => ({ type: "array", uniqueItems: true })) }
      const list = Array.from({ length: 2_400 }, (_, i) => [i])
      const started = performance.now()
      const over = yield* v.validate(list, slow)
      const elapsed = performance.now() - started
      expect(Either.isLeft(over) && over.left).toBe("schema validation ran over its budget of 300 ms")
      expect(elapsed).toBeLessThan(1_500)
      expect(yield* v.validate("x", { type: "string" })).toEqual(Either.right(undefined))
    }).pipe(Effect.provide(SchemaValidator.layer(300)))
  )
})
