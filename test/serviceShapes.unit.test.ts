import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"

/**
 * A service declares its surface before its implementation: the Tag names an explicit shape (never
 * one inferred from `make`) and stands above `make`, so a reader learns the API from the top of the
 * file.
 */
const services = [...new Bun.Glob("src/**/*.ts").scanSync(".")]
  .map((path) => ({ path, text: readFileSync(path, "utf8") }))
  .filter(({ text }) => /extends Context\.Tag\(/.test(text))

const lineOf = (text: string, pattern: RegExp) => {
  const at = text.search(pattern)
  return at < 0 ? null : text.slice(0, at).split("\n").length
}

describe("service surfaces", () => {
  test("the check finds the services", () => {
    expect(services.length).toBeGreaterThan(25)
  })

  test("no Tag infers its shape from make", () => {
    const inferred = services.filter(({ text }) =>
      /Context\.Tag\([^)]*\)<\s*\w+,\s*Effect\.Effect\.Success</.test(text)
    )
    expect(inferred.map((s) => s.path)).toEqual([])
  })

  test("every Tag stands above its make", () => {
    const late = services.filter(({ text }) => {
      const tag = lineOf(text, /extends Context\.Tag\(/)
      const make = lineOf(text, /^const make\b/m)
      return make !== null && tag !== null && tag > make
    })
    expect(late.map((s) => s.path)).toEqual([])
  })
})
