import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { Arbitrary, Effect, FastCheck, Schema } from "effect"
import * as Errors from "../src/domain/errors.js"
import { type ApiErrorClass, NotFound, RateLimited, TargetRefused, wire } from "../src/domain/errors.js"
import { OutboundTargetRefused } from "../src/outbound/outboundGuard.js"
import { it } from "./support/effectTest.js"

/**
 * API errors are tagged errors: code fails with them by `yield*` and matches them by tag, while
 * the body on the wire stays `{error, message}` (and the class's own fields) without the tag.
 */
const apiErrorClasses = (Object.values(Errors) as ReadonlyArray<unknown>).filter(
  (value): value is ApiErrorClass =>
    typeof value === "function" &&
    "_tag" in value &&
    "fields" in value &&
    "error" in (value as unknown as ApiErrorClass).fields
)

describe("API errors", () => {
  test("the check finds every error class", () => {
    expect(apiErrorClasses.length).toBeGreaterThan(40)
  })

  it.live("an API error is yielded and matched by its tag, beside the guard's own refusal", () =>
    Effect.gen(function* () {
      const failing = (which: "api" | "guard") =>
        Effect.gen(function* () {
          if (which === "api") return yield* new TargetRefused({ message: "target refused: loopback" })
          return yield* new OutboundTargetRefused({ reason: "loopback" })
        })
      const caught = (which: "api" | "guard") =>
        failing(which).pipe(
          Effect.catchTags({
            TargetRefused: (e) => Effect.succeed(`api: ${e.message}`),
            OutboundTargetRefused: (e) => Effect.succeed(`guard: ${e.reason}`)
          })
        )
      expect(yield* caught("api")).toBe("api: target refused: loopback")
      expect(yield* caught("guard")).toBe("guard: loopback")
    })
  )

  test("every class's body on the wire is its fields without the tag, and reads back as the class", () => {
    for (const errorClass of apiErrorClasses) {
      const schema = wire(errorClass)
      const expectedKeys = Object.keys(errorClass.fields)
        .filter((key) => key !== "_tag")
        .sort()
      FastCheck.assert(
        FastCheck.property(Arbitrary.make(errorClass), (error) => {
          const body = Schema.encodeSync(schema)(error) as Record<string, unknown>
          expect(
            Object.keys(body)
              .filter((key) => body[key] !== undefined)
              .sort()
          ).toEqual(expectedKeys)
          const read = Schema.decodeUnknownSync(schema)(body)
          expect(read).toBeInstanceOf(errorClass as unknown as new (...args: Array<never>) => unknown)
          expect(read._tag).toBe(errorClass._tag)
        }),
        { numRuns: 5 }
      )
    }
  })

  test("a body keeps its code and fields exactly", () => {
    expect(Schema.encodeSync(wire(NotFound))(new NotFound({ message: "no such thing" }))).toEqual({
      error: "NOT_FOUND",
      message: "no such thing"
    })
    expect(
      Schema.encodeSync(wire(RateLimited))(new RateLimited({ message: "slow down", retryAfterSeconds: 3 }))
    ).toEqual({
      error: "RATE_LIMITED",
      message: "slow down",
      retryAfterSeconds: 3
    })
  })
})

/** Tags and class names of the errors in src/: a tag names one error, so matching by tag is unambiguous. */
const declaredErrors = [...new Bun.Glob("src/**/*.ts").scanSync(".")].flatMap((path) =>
  [
    ...readFileSync(path, "utf8").matchAll(
      /class (\w+) extends (?:Data\.TaggedError|Schema\.TaggedError<\w+>\(\w*\)|ApiError<\w+>\(\))\(\s*"(\w+)"/g
    )
  ].map((m) => ({ path, name: m[1]!, tag: m[2]! }))
)

describe("one name per error", () => {
  test("the check finds the errors", () => {
    expect(declaredErrors.length).toBeGreaterThan(70)
  })

  test("no tag and no error class name is declared twice", () => {
    const twice = (key: "name" | "tag") =>
      [...new Set(declaredErrors.map((e) => e[key]))]
        .map((value) => declaredErrors.filter((e) => e[key] === value))
        .filter((found) => found.length > 1)
        .map((found) => `${found[0]![key]}: ${found.map((e) => e.path).join(", ")}`)
    expect(twice("tag")).toEqual([])
    expect(twice("name")).toEqual([])
  })
})

/** Each `instanceof` in `text` against one of `names`, as `path:line: instanceof Name`. */
const instanceofAgainst = (path: string, text: string, names: ReadonlySet<string>) =>
  [...text.matchAll(/\binstanceof\s+([\w$.]+)/g)]
    .filter((m) => names.has(m[1]!.split(".").pop()!))
    .map((m) => `${path}:${text.slice(0, m.index).split("\n").length}: instanceof ${m[1]}`)

describe("errors of ours are matched by tag", () => {
  const ownErrors = new Set(declaredErrors.map((e) => e.name))

  test("the rule finds an instanceof against a tagged class of ours, and leaves a library's class alone", () => {
    const text = [
      "if (e instanceof OutboundTargetRefused) return e.reason",
      "if (problem instanceof HttpApiError.HttpApiDecodeError) return null",
      "const x = e instanceof Error ? e.message : String(e)",
      "if (failure instanceof Errors.NotFound) return 404"
    ].join("\n")
    expect(instanceofAgainst("src/x.ts", text, ownErrors)).toEqual([
      "src/x.ts:1: instanceof OutboundTargetRefused",
      "src/x.ts:4: instanceof Errors.NotFound"
    ])
  })

  test("no file in src/ uses instanceof against a TaggedError declared in src/ (Effect.catchTag, Predicate.isTagged)", () => {
    const found = [...new Bun.Glob("src/**/*.ts").scanSync(".")].flatMap((path) =>
      instanceofAgainst(path, readFileSync(path, "utf8"), ownErrors)
    )
    expect(found).toEqual([])
  })
})
