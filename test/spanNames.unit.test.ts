import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"

/**
 * A span is named `<Service>.<function>` after the function it wraps, so a trace reads like the
 * code. Checked on the forms that put both names on one line: `const f = Effect.fn("S.f")`,
 * `f: Effect.fn("S.f")` and `f: (...) => ....pipe(Effect.withSpan("S.f"))`.
 */
const NAMED = [
  /(?:const\s+(\w+)\s*=|^\s*(\w+):)\s*Effect\.fn\("\w+\.(\w+)"/gm,
  /^\s*(\w+):[^\n]*=>[^\n]*Effect\.withSpan\("\w+\.(\w+)"/gm
]

const sources = [...new Bun.Glob("src/**/*.ts").scanSync(".")]

const mismatches = (path: string) => {
  const text = readFileSync(path, "utf8")
  return NAMED.flatMap((pattern) =>
    [...text.matchAll(pattern)].flatMap((m) => {
      const names = m.slice(1).filter((g) => g !== undefined)
      const [fn, span] = [names[0], names[names.length - 1]]
      return fn === span ? [] : [`${path}: ${fn} is traced as ${span}`]
    })
  )
}

describe("span names", () => {
  test("the checker sees the forms it checks", () => {
    expect(sources.length).toBeGreaterThan(50)
    const seen = sources.flatMap((path) => NAMED.flatMap((p) => [...readFileSync(path, "utf8").matchAll(p)]))
    expect(seen.length).toBeGreaterThan(20)
  })

  test("every span named on its function's line carries that function's name", () => {
    expect(sources.flatMap(mismatches)).toEqual([])
  })
})
