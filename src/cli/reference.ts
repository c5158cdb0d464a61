import { BunContext } from "@effect/platform-bun"
import { Effect } from "effect"
import { BUY_EXIT, BUY_EXIT_MEANING } from "../client/cli.js"
import { cli } from "./commands.js"
import { capturingConsole } from "./output.js"

// docs/reference/cli.md, written from @effect/cli's own help of the one definition.

// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character is what an ANSI colour code starts with
const ANSI = /\x1b\[[0-9;]*m/g

/** What `sextant ...argv` prints on stdout, without colours. */
const printed = (argv: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const out: Array<string> = []
    const console = yield* capturingConsole(out, [])
    yield* cli(["bun", "sextant", ...argv]).pipe(
      Effect.withConsole(console),
      Effect.provide(BunContext.layer),
      Effect.orDie
    )
    return out.join("\n").replace(ANSI, "").trimEnd()
  })

export interface ListedCommand {
  /** The words that name it, e.g. "keys hash". */
  readonly path: string
  /** Its usage as the help lists it, e.g. "keys hash [--config file] <api-key>". */
  readonly usage: string
  readonly description: string
}

/** The words naming a command at the start of a usage, up to its first argument or option. */
const commandWords = (usage: string) => {
  const words = usage.trim().split(/\s+/)
  const end = words.findIndex((word) => !/^[a-z][a-z-]*$/.test(word))
  return (end < 0 ? words : words.slice(0, end)).join(" ")
}

/**
 * The runnable commands of a `sextant --help` text: its COMMANDS list, less the groups (`keys`)
 * whose subcommands are listed after them.
 */
export const listedCommands = (help: string): ReadonlyArray<ListedCommand> => {
  const section = help.slice(help.indexOf("COMMANDS"))
  const listed = [...section.matchAll(/^\s*- (.+?)(?: {2,}(.*))?$/gm)].map(([, usage = "", description = ""]) => ({
    path: commandWords(usage),
    usage: usage.trim(),
    description: description.trim()
  }))
  return listed.filter((c) => !listed.some((other) => other.path.startsWith(`${c.path} `)))
}

const BUILT_IN = /^(--completions|--log-level|\(-h, --help\)|--wizard|--version)(?= |$)/

/** Drops the entries of @effect/cli's built-in options (the same under every command; listed once above). */
const withoutBuiltIns = (help: string) => {
  let skipping = false
  return help
    .split("\n")
    .filter((line) => {
      if (line !== "" && !line.startsWith(" ")) skipping = BUILT_IN.test(line)
      return !skipping
    })
    .join("\n")
}

/** A command's help without the banner (name and version) and the built-in options, from USAGE on. */
const helpOf = (path: string) =>
  Effect.map(printed([...path.split(" "), "--help"]), (text) =>
    withoutBuiltIns(text.slice(text.indexOf("USAGE"))).trimEnd()
  )

/** A table cell: a `|` would end it. */
const cell = (text: string) => text.replaceAll("|", "\\|")

const buyExitTable = () =>
  [
    "| code | `error` on stderr | meaning |",
    "|---|---|---|",
    ...Object.entries(BUY_EXIT).map(([name, code]) => {
      const { errors, meaning } = BUY_EXIT_MEANING[name as keyof typeof BUY_EXIT]
      return `| ${code} | ${errors.map((e) => `\`${e}\``).join(", ")} | ${meaning} |`
    })
  ].join("\n")

/** The whole of docs/reference/cli.md. */
export const renderReference = Effect.gen(function* () {
  const commands = listedCommands(yield* printed(["--help"]))
  const sections = yield* Effect.forEach(commands, (c) =>
    Effect.map(helpOf(c.path), (help) => `## \`sextant ${c.path}\`\n\n\`\`\`text\n${help}\n\`\`\``)
  )
  return [
    "# Command line reference",
    "",
    "Generated from the command definition (`src/cli/commands.ts`) by `npm run docs:cli`; a test fails when this file",
    "differs from what the definition prints. `sextant --help` and `sextant <command> --help` print the same text.",
    "",
    "From a checkout run `bun src/main.ts <command>`; `npm run build` makes the single binary `dist/sextant`.",
    "`sextant` alone runs `serve`. Every command takes `--config FILE` (else `SEXTANT_CONFIG`, else the embedded",
    "defaults). A bad config stops any command with exit 2 and one line, `config error: <field>: <reason>`; a bad",
    'command line exits 2 with `{"error":"USAGE","message":...}` as the last line on stderr. Every command also takes',
    "@effect/cli's built-in options: `-h`/`--help`, `--version`, `--log-level`, `--completions <shell>` and `--wizard`.",
    "",
    "| command | what it does |",
    "|---|---|",
    ...commands.map((c) => `| \`sextant ${cell(c.usage)}\` | ${cell(c.description)} |`),
    "",
    ...sections.flatMap((s) => [s, ""]),
    "## Exit codes of `sextant buy`",
    "",
    buyExitTable(),
    ""
  ].join("\n")
})
