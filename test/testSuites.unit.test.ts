/**
 * Which test files `npm run test:unit` runs: exactly those named `*.unit.test.ts`, and a file is
 * named so exactly when it, and every test module it imports at run time, starts nothing that
 * makes a test slow or machine-bound (a server, a process, a browser, a request, a real sleep),
 * and it is not listed in SLOW_WITHOUT_IO. So a slow test cannot creep into the fast loop, and a
 * fast one is not left out of it.
 */
import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"
import ts from "typescript"

const ROOT = resolve(import.meta.dir, "..")
const TEST = join(ROOT, "test")

/** Code (comments stripped) that makes a test file not a unit test, with what it does. */
export const SLOW_CODE: ReadonlyArray<readonly [string, RegExp]> = [
  ["starts a server", /\bBun\.serve\(|\bBunHttpServer\b|\.listen\(/],
  ["starts a process", /\bBun\.spawn|"node:child_process"/],
  ["drives a browser", /"playwright-core"/],
  ["sends a request", /\bfetch\(/],
  ["sleeps for real", /\bBun\.sleep\(|\bsetTimeout\(/]
]

/** Files that start none of the above and are still too slow for the fast loop, with why. */
const SLOW_WITHOUT_IO: Record<string, string> = {
  "payeeShortlist.property.test.ts": "hundreds of random catalogs written to SQLite, about 15 s",
  "schemaGuard.test.ts": "waits out the schema validator's real time budget on a worker thread"
}

const K = ts.SyntaxKind
const parsed = new Map<string, { readonly code: string; readonly imports: ReadonlyArray<string> }>()

/**
 * A module's code without comments, and the test modules it imports at run time (type-only imports
 * vanish). Read with the TypeScript scanner, not the parser: a tenth of the time for the whole tree.
 */
const parse = (file: string) => {
  const known = parsed.get(file)
  if (known !== undefined) return known
  const text = readFileSync(file, "utf8")
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text)
  const tokens: Array<{ readonly kind: ts.SyntaxKind; readonly text: string }> = []
  const comments: Array<readonly [number, number]> = []
  // Template literals: a `}` closing a `${` resumes the template's text, which the scanner must be told.
  const templates: Array<number> = []
  let depth = 0
  for (let kind = scanner.scan(); kind !== K.EndOfFileToken; kind = scanner.scan()) {
    if (kind === K.CloseBraceToken && templates.at(-1) === depth) {
      kind = scanner.reScanTemplateToken(false)
      if (kind === K.TemplateTail) templates.pop()
    } else if (kind === K.TemplateHead) templates.push(depth)
    else if (kind === K.OpenBraceToken) depth++
    else if (kind === K.CloseBraceToken) depth--
    if (kind === K.SingleLineCommentTrivia || kind === K.MultiLineCommentTrivia)
      comments.push([scanner.getTokenStart(), scanner.getTokenEnd()])
    else tokens.push({ kind, text: scanner.getTokenValue() })
  }
  const code = comments.reduceRight((rest, [from, to]) => rest.slice(0, from) + rest.slice(to), text)
  const specifiers = tokens.flatMap((token, i) => {
    const next = tokens[i + 1]
    const typeOnly =
      next?.text === "type" && ![K.FromKeyword, K.CommaToken, K.EqualsToken].includes(tokens[i + 2]?.kind ?? K.Unknown)
    if (typeOnly) return []
    // `import ... "x"` and `export {...} from "x"` / `export * from "x"`: the first string after `from` (or right after import).
    if (token.kind === K.ImportKeyword && next?.kind !== K.OpenParenToken && next?.kind !== K.DotToken) {
      const literal = tokens.slice(i + 1).find((t) => t.kind === K.StringLiteral || t.kind === K.SemicolonToken)
      return literal?.kind === K.StringLiteral ? [literal.text] : []
    }
    if (token.kind === K.ExportKeyword && (next?.kind === K.OpenBraceToken || next?.kind === K.AsteriskToken)) {
      const from = tokens.slice(i + 1).findIndex((t) => t.kind === K.FromKeyword || t.kind === K.SemicolonToken)
      const literal = tokens[i + 2 + from]
      return from >= 0 && tokens[i + 1 + from]?.kind === K.FromKeyword && literal?.kind === K.StringLiteral
        ? [literal.text]
        : []
    }
    return []
  })
  const imports = specifiers.flatMap((specifier) => {
    if (!specifier.startsWith(".")) return []
    const target = resolve(dirname(file), specifier.replace(/\.js$/, ".ts"))
    return target.startsWith(TEST) && existsSync(target) ? [target] : []
  })
  const result = { code, imports }
  parsed.set(file, result)
  return result
}

/** Why `file` is not a unit test: each slow thing it or a test module it imports does. Empty for a unit test. */
export const slowReasons = (file: string, seen = new Set<string>()): ReadonlyArray<string> => {
  if (seen.has(file)) return []
  seen.add(file)
  const { code, imports } = parse(file)
  const own = SLOW_CODE.filter(([, pattern]) => pattern.test(code)).map(([what]) => `${relative(ROOT, file)} ${what}`)
  return [...own, ...imports.flatMap((f) => slowReasons(f, seen))]
}

/** Every file under `dir` (recursively) whose name ends with one of `extensions`. */
const filesUnder = (dir: string, extensions: ReadonlyArray<string>): ReadonlyArray<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return name === "node_modules" ? [] : filesUnder(path, extensions)
    return extensions.some((e) => name.endsWith(e)) ? [path] : []
  })

const testFiles = readdirSync(TEST)
  .filter((f) => f.endsWith(".test.ts"))
  .sort()

describe("the unit suite", () => {
  test("a test file is named *.unit.test.ts exactly when nothing it runs is slow", () => {
    const misnamed = testFiles.flatMap((name) => {
      // This file names the slow code it looks for.
      const slow = SLOW_WITHOUT_IO[name]
      const reasons =
        name === "testSuites.unit.test.ts"
          ? []
          : [...slowReasons(join(TEST, name)), ...(slow === undefined ? [] : [slow])]
      const unit = name.endsWith(".unit.test.ts")
      if (unit && reasons.length > 0) return [`${name} is not a unit test: ${reasons.join("; ")}`]
      if (!unit && reasons.length === 0)
        return [`${name} starts nothing slow: name it ${name.replace(/\.test\.ts$/, ".unit.test.ts")}`]
      return []
    })
    expect(misnamed).toEqual([])
    expect(Object.keys(SLOW_WITHOUT_IO).filter((name) => !testFiles.includes(name))).toEqual([])
  })

  test("the rule sees slow code through the test modules a file imports", () => {
    expect(slowReasons(join(TEST, "support", "serveProcess.ts"))).toContain(
      "test/support/serveProcess.ts starts a process"
    )
    expect(slowReasons(join(TEST, "fixtures", "paidResource.ts"))).toContain(
      "test/fixtures/x402Resource.ts starts a server"
    )
    expect(slowReasons(join(TEST, "fixtures", "observations.ts"))).toEqual([])
  })

  test("npm run test:unit selects the unit files and npm test every file", () => {
    const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      scripts: Record<string, string>
    }
    expect(scripts["test:unit"]).toBe("bun test --timeout 5000 .unit.test.ts")
    expect(scripts.test).toBe("bun test --timeout 60000")
  })

  test("every test file the code and the docs name exists, so a renamed test leaves no stale pointer", () => {
    const naming = [
      ...filesUnder(join(ROOT, "src"), [".ts"]),
      ...filesUnder(join(ROOT, "docs"), [".md"]),
      ...filesUnder(TEST, [".ts"])
    ]
    const stale = [...naming, join(ROOT, "README.md"), join(ROOT, "CONTRIBUTING.md")]
      .filter(existsSync)
      .flatMap((file) =>
        [...readFileSync(file, "utf8").matchAll(/test\/[\w./-]+\.test\.ts/g)].map(
          (m) => [relative(ROOT, file), m[0]] as const
        )
      )
      .filter(([, named]) => !existsSync(join(ROOT, named)))
    expect(stale).toEqual([])
  })
})

/**
 * What a test needs comes from npm or is started by the test itself, so `npm install && npm test`
 * passes on a machine with only Node and npm: no test skips itself when a tool is missing, and none
 * names a system binary (`sh`, and `curl` in the README's own commands, excepted; `runuser` as root).
 */
export const SYSTEM_DEPENDENCE: ReadonlyArray<readonly [string, RegExp]> = [
  ["skips tests", /\b(?:test|it|describe)\s*\.\s*(?:skip|skipIf|todo|todoIf|if)\s*\(/],
  ["looks a binary up on PATH", /\bBun\.which\(/],
  ["runs a binary from a system folder", /["'`]\/(?:usr\/)?(?:local\/)?s?bin\//]
]

describe("a fresh machine", () => {
  test("no test file or test module skips tests or depends on a system binary", () => {
    const modules = [...filesUnder(TEST, [".ts"])].filter((f) => !f.endsWith("testSuites.unit.test.ts"))
    const found = modules.flatMap((file) =>
      SYSTEM_DEPENDENCE.filter(([, pattern]) => pattern.test(parse(file).code)).map(
        ([what]) => `${relative(ROOT, file)} ${what}`
      )
    )
    expect(found).toEqual([])
  })

  test("the rule catches a skipped suite and a system browser", () => {
    const hits = (code: string) => SYSTEM_DEPENDENCE.filter(([, p]) => p.test(code)).map(([what]) => what)
    expect(hits(`describe.skipIf(!available)("on Postgres", () => {})`)).toEqual(["skips tests"])
    expect(hits(`chromium.launch({ executablePath: "/usr/bin/chromium" })`)).toEqual([
      "runs a binary from a system folder"
    ])
    expect(hits(`const onPath = Bun.which("initdb")`)).toEqual(["looks a binary up on PATH"])
    expect(hits(`test("a skip is counted", () => {})`)).toEqual([])
  })
})
