import { describe, expect, test } from "bun:test"
import { Either } from "effect"
import { canonicalBytes, canonicalize, MAX_CANONICAL_DEPTH } from "../src/encoding/canonicalJson.js"

const ok = (value: unknown) => Either.getOrThrow(canonicalize(value))
const refused = (value: unknown) => {
  const result = canonicalize(value)
  if (Either.isRight(result)) throw new Error(`expected a refusal, got ${result.right}`)
  return result.left
}

/** A double from its IEEE 754 bit pattern, as RFC 8785 Appendix B lists them. */
const double = (hex: string) => {
  const view = new DataView(new ArrayBuffer(8))
  view.setBigUint64(0, BigInt(`0x${hex}`))
  return view.getFloat64(0)
}

describe("canonical JSON (RFC 8785)", () => {
  test("the RFC's section 3.2.2 example serialises to its published output", () => {
    // Parsed from text, as a receiver would: the escapes and number spellings are the RFC's.
    const input = JSON.parse(String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`)
    expect(ok(input)).toBe(
      // Plain string, not String.raw: Bun's transpiler rewrites non-ASCII inside template literals as \u escapes.
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"\u20ac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )
  })

  test("the RFC's section 3.2.3 sorting example orders keys by UTF-16 code unit", () => {
    const input = JSON.parse(String.raw`{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }`)
    expect(ok(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
    )
  })

  test("a supplementary-plane key sorts by its surrogates, before U+FB33 but after U+20AC", () => {
    // By code point U+1F600 would follow U+FB33; by UTF-16 code unit (0xD83D) it comes first.
    expect(ok({ "\ufb33": 1, "\ud83d\ude00": 2, "\u20ac": 3 })).toBe('{"\u20ac":3,"\ud83d\ude00":2,"\ufb33":1}')
  })

  test("numbers follow the RFC's Appendix B table", () => {
    const table: ReadonlyArray<readonly [string, string]> = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["ffefffffffffffff", "-1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["44b52d02c7e14af7", "1.0000000000000001e+23"],
      ["444b1ae4d6e2ef4e", "999999999999999700000"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["41b3de4355555553", "333333333.3333332"],
      ["41b3de4355555554", "333333333.33333325"],
      ["41b3de4355555555", "333333333.3333333"],
      ["41b3de4355555556", "333333333.3333334"],
      ["41b3de4355555557", "333333333.33333343"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"]
    ]
    for (const [bits, expected] of table) expect([bits, ok(double(bits))]).toEqual([bits, expected])
  })

  test("the RFC's NaN and Infinity patterns are refused with the path of the value", () => {
    expect(refused(double("7fffffffffffffff")).reason).toContain("non-finite")
    expect(refused(double("7ff0000000000000")).reason).toContain("non-finite")
    const error = refused({ payment: { amounts: [1, -Infinity] } })
    expect(error._tag).toBe("CanonicalJsonError")
    expect(error.path).toBe("/payment/amounts/1")
  })

  test("lone surrogates are refused in values and in keys, while pairs pass", () => {
    expect(refused({ intent: "abc\ud800" }).path).toBe("/intent")
    expect(refused({ "\udc00": 1 }).reason).toContain("lone surrogate")
    expect(refused(["\ude00\ud83d"]).path).toBe("/0")
    expect(ok("\ud83d\ude00")).toBe('"😀"')
  })

  test("undefined members are dropped, undefined array items become null, nested arrays keep order", () => {
    expect(ok({ b: undefined, a: [undefined, [3, [2, 1]], null], c: { z: undefined } })).toBe(
      '{"a":[null,[3,[2,1]],null],"c":{}}'
    )
    expect(ok(undefined)).toBe("null")
    expect(ok([])).toBe("[]")
    expect(ok({})).toBe("{}")
  })

  test("control characters use the short escapes or lowercase \\u00xx, and nothing else is escaped", () => {
    expect(ok("\u0000\u0008\u0009\u000a\u000c\u000d\u001f\u007f/<é")).toBe('"\\u0000\\b\\t\\n\\f\\r\\u001f\u007f/<é"')
  })

  test("the same data in any key order gives the same bytes, and those bytes are UTF-8", () => {
    const a = { receiptId: "r1", response: { status: 200, bodySha256: "ab" }, request: { capability: "€" } }
    const b = { request: { capability: "€" }, response: { bodySha256: "ab", status: 200 }, receiptId: "r1" }
    const bytes = Either.getOrThrow(canonicalBytes(a))
    expect(bytes).toEqual(Either.getOrThrow(canonicalBytes(b)))
    expect(Buffer.from(bytes).toString("hex")).toContain(Buffer.from("€").toString("hex"))
    expect(new TextDecoder().decode(bytes)).toBe(ok(b))
  })

  test("values that are not JSON data are refused instead of being coerced", () => {
    expect(refused({ at: new Date(0) }).reason).toContain("Date")
    expect(refused({ n: 10n }).reason).toContain("bigint")
    expect(refused({ f: () => 1 }).reason).toContain("function")
    const cyclic: Record<string, unknown> = { a: 1 }
    cyclic.self = cyclic
    expect(refused(cyclic)).toMatchObject({ path: "/self", reason: "cyclic structure" })
    // The same object twice side by side is not a cycle.
    const shared = { x: 1 }
    expect(ok({ a: shared, b: [shared] })).toBe('{"a":{"x":1},"b":[{"x":1}]}')
  })

  test(`nesting is bounded at ${MAX_CANONICAL_DEPTH} levels of objects and arrays, so deep input is refused, never a stack overflow`, () => {
    expect(MAX_CANONICAL_DEPTH).toBe(64)
    /** `levels` containers, alternating objects and arrays, around a scalar. */
    const nested = (levels: number) => {
      let v: unknown = "leaf"
      for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { k: v } : [v]
      return v
    }
    expect(ok(nested(64))).toBe(`${'[{"k":'.repeat(32)}"leaf"${"}]".repeat(32)}`)
    const refusal = refused(nested(65))
    expect(refusal.reason).toBe("nested deeper than 64 levels")
    // The path leads to the 65th container: 64 steps through the 64 levels around it.
    expect(refusal.path.split("/").length - 1).toBe(64)
    expect(refused({ intent: nested(20_000) }).reason).toBe("nested deeper than 64 levels")
    expect(refused(nested(200_000)).reason).toBe("nested deeper than 64 levels")
  })
})
