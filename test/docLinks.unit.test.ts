import { describe, expect, test } from "bun:test"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

/**
 * References into the docs keep resolving when headings move: a code comment citing
 * `docs/decisions.md, <Heading>` (or `docs/decisions.md "<Heading>"`) names an existing record, and
 * every relative Markdown link of README.md and docs/ names an existing file and, after `#`, one
 * of its headings.
 */

const ROOT = resolve(import.meta.dir, "..")

const filesUnder = (dir: string, ext: string): ReadonlyArray<string> =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? filesUnder(path, ext) : path.endsWith(ext) ? [path] : []
  })

const headingsOf = (markdown: string) => [...markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => m[1]!.trim())

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
export const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-")

/** A comment's text with its line breaks and comment markers folded, so a wrapped reference reads as one line. */
const folded = (source: string) => source.replace(/\n\s*(\*(?!\/)|\/\/)?\s*/g, " ")

/** The heading each `docs/decisions.md, <Heading>` reference names, cut at the punctuation that ends it. */
export const citedHeadings = (source: string): ReadonlyArray<string> =>
  [...folded(source).matchAll(/docs\/decisions\.md(?:, | ")([^;.:)"]+)/g)].map((m) => m[1]!.trim())

describe("references into docs/decisions.md from the code", () => {
  const headings = new Set(
    headingsOf(readFileSync(join(ROOT, "docs/decisions.md"), "utf8")).map((h) => h.toLowerCase())
  )
  const sources = [...filesUnder(join(ROOT, "src"), ".ts"), ...filesUnder(join(ROOT, "test"), ".ts")].filter(
    (f) => f !== import.meta.path
  )
  const cited = sources.flatMap((file) =>
    citedHeadings(readFileSync(file, "utf8")).map((heading) => ({ file: relative(ROOT, file), heading }))
  )

  test("the code cites records by heading", () => {
    expect(cited.length).toBeGreaterThan(10)
  })

  test("every cited heading exists", () => {
    expect(cited.filter(({ heading }) => !headings.has(heading.toLowerCase()))).toEqual([])
  })

  test("a wrapped comment reference is read whole", () => {
    expect(citedHeadings("/**\n * as failover does (docs/decisions.md, settle\n * failover). Then")).toEqual([
      "settle failover"
    ])
    expect(citedHeadings('// see docs/decisions.md "Settle overhead": the shortlist')).toEqual(["Settle overhead"])
  })
})

describe("relative Markdown links of README.md and docs/", () => {
  const pages = [join(ROOT, "README.md"), join(ROOT, "CONTRIBUTING.md"), ...filesUnder(join(ROOT, "docs"), ".md")]
  const links = pages.flatMap((page) =>
    [...readFileSync(page, "utf8").matchAll(/\]\(([^)\s]+)\)/g)]
      .map((m) => m[1]!)
      .filter((target) => !/^[a-z]+:/.test(target))
      .map((target) => ({ page: relative(ROOT, page), target }))
  )

  const broken = (page: string, target: string): boolean => {
    const [path, anchor] = target.split("#") as [string, string | undefined]
    const file = path === "" ? join(ROOT, page) : resolve(dirname(join(ROOT, page)), path)
    if (!existsSync(file)) return true
    if (anchor === undefined || statSync(file).isDirectory()) return false
    return !headingsOf(readFileSync(file, "utf8")).map(anchorOf).includes(anchor)
  }

  test("the docs link to each other", () => {
    expect(links.length).toBeGreaterThan(20)
  })

  test("every link names an existing file and heading", () => {
    expect(links.filter(({ page, target }) => broken(page, target))).toEqual([])
  })
})

describe("the settle flow's step numbers", () => {
  const architecture = readFileSync(join(ROOT, "docs/architecture.md"), "utf8")
  const flow = architecture.slice(architecture.indexOf("## The flow of a settle"))
  const steps = new Map([...flow.matchAll(/^(\d+)\. \*\*([^*]+?)\.?\*\*/gm)].map((m) => [Number(m[1]), m[2]!]))
  const code = [
    "src/settlement/Settlement.ts",
    "src/settlement/PaymentChecks.ts",
    "src/settlement/execution.ts",
    "src/settlement/Reservation.ts",
    "src/settlement/LedgerGuard.ts",
    "src/settlement/Forwarding.ts",
    "src/settlement/OutcomeRecord.ts",
    "src/settlement/outcome.ts",
    "src/settlement/replay.ts"
  ].flatMap((file) =>
    [...readFileSync(join(ROOT, file), "utf8").matchAll(/Step (\d+): ([A-Z][a-z]+(?: [a-z]+)*)/g)].map((m) => ({
      file,
      step: Number(m[1]),
      name: m[2]!
    }))
  )

  test("docs/architecture.md numbers the steps 1 to N", () => {
    expect([...steps.keys()]).toEqual(Array.from({ length: steps.size }, (_, i) => i + 1))
    expect(steps.size).toBeGreaterThan(8)
  })

  test("every `Step N: Name` comment in the settlement code is step N of that list, by name", () => {
    expect(code.length).toBeGreaterThan(8)
    expect(code.filter(({ step, name }) => steps.get(step) !== name)).toEqual([])
  })
})
