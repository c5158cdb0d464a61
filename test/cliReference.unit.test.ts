import { describe, expect, test } from "bun:test"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { listedCommands, renderReference } from "../src/cli/reference.js"
import { runCli } from "./support/cli.js"
import { it } from "./support/effectTest.js"

const ROOT = join(import.meta.dir, "..")

/** The command a table row names: the words after `sextant` in its first backticked cell, up to the first argument or option. */
const commandOfCell = (cell: string) => {
  const words = cell.trim().split(/\s+/)
  if (words[0] !== "sextant") return null
  const path: Array<string> = []
  for (const word of words.slice(1)) {
    if (!/^[a-z][a-z-]*$/.test(word)) break
    path.push(word)
  }
  return path.join(" ")
}

/** The commands named by the table under a markdown `## Commands` heading (first backticked cell of each row). */
const tableCommands = (markdown: string): ReadonlyArray<string | null> => {
  const start = markdown.search(/^## Commands\s*$/m)
  if (start < 0) return []
  const section = markdown.slice(start).split(/^## (?!Commands)/m)[0]!
  return [...section.matchAll(/^\|\s*`([^`]+)`/gm)].map(([, cell]) => commandOfCell(cell!))
}

/** What is wrong with a README's command table against the definition's commands ("" is `sextant` alone, which serves). */
const tableProblems = (markdown: string, commands: ReadonlyArray<string>) => {
  const named = tableCommands(markdown)
  return [
    ...commands.filter((c) => !named.includes(c)).map((c) => `missing: sextant ${c}`),
    ...named
      .filter((n) => n === null || (n !== "" && !commands.includes(n)))
      .map((n) => `not a command: ${n ?? "(no sextant)"}`)
  ]
}

const help = (await runCli("--help")).out.join("\n")
const commands = listedCommands(help).map((c) => c.path)

describe("the command line's one definition", () => {
  test("lists every command, nested ones by their full path", () => {
    expect([...commands].sort()).toEqual(
      [
        "buy",
        "catalog import",
        "facilitator channels",
        "keys buyer-new",
        "keys facilitator-new",
        "keys hash",
        "keys probe-address",
        "mcp",
        "probe",
        "receipt verify",
        "serve",
        "vertical"
      ].sort()
    )
  })

  test("help comes from it: `sextant --help` and `sextant buy --help` exit 0 with the descriptions and options", async () => {
    expect(help).toContain("Verification, routing, policy and settlement layer")
    const buy = await runCli("buy", "--help")
    expect(buy.code).toBe(0)
    expect(buy.out.join("\n")).toContain("--max-usd")
    expect(buy.out.join("\n")).toContain("the most one request may cost")
  })

  it.live(
    "docs/reference/cli.md is what `npm run docs:cli` writes from it",
    () =>
      Effect.gen(function* () {
        const committed = readFileSync(join(ROOT, "docs", "reference", "cli.md"), "utf8")
        expect(committed).toBe(yield* renderReference)
      }),
    30_000
  )

  test("README.md's command table names every command and nothing else", () => {
    expect(tableProblems(readFileSync(join(ROOT, "README.md"), "utf8"), commands)).toEqual([])
  })

  test("the table check fails on a missing command and on a row naming no command", () => {
    const readme = (rows: ReadonlyArray<string>) =>
      [
        "# x",
        "## Commands",
        "",
        "| command | what |",
        "|---|---|",
        ...rows,
        "",
        "## Next",
        "| `sextant nope` | |"
      ].join("\n")
    const all = commands.map((c) => `| \`sextant ${c} <x>\` | does |`)
    expect(tableProblems(readme(all), commands)).toEqual([])
    expect(tableProblems(readme(all.slice(1)), commands)).toEqual([`missing: sextant ${commands[0]}`])
    expect(tableProblems(readme([...all, "| `sextant keys rotate` | |", "| `bun src/main.ts` | |"]), commands)).toEqual(
      ["not a command: keys rotate", "not a command: (no sextant)"]
    )
    expect(tableProblems("# no table", commands)).toHaveLength(commands.length)
  })
})
