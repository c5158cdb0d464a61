import { SingleBar } from "cli-progress"
import { Effect } from "effect"
import { ServicesLive } from "../app.js"
import type { Config } from "../config.js"
import { Importer, type ImportSourceSpec } from "./Importer.js"

/**
 * The source an import from the command line writes as: `--id`, else the configured source with
 * that URL (so a manual pull and the schedule agree on what the source lists), else "cli".
 */
export const cliSource = (config: Config, args: ReadonlyArray<string>): ImportSourceSpec | string => {
  const [location, ...flags] = args
  if (location === undefined || location.startsWith("--")) return "catalog import needs a URL or a file"
  let id: string | undefined
  for (let i = 0; i < flags.length; i++) {
    if (flags[i] === "--id" && flags[i + 1] !== undefined) id = flags[++i]
    else return `unknown argument "${flags[i]}"`
  }
  const configured = config.catalogSources.find((s) => (id !== undefined ? s.id === id : s.url === location))
  if (id !== undefined && !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id)) return `--id: expected a lowercase id such as "cdp-bazaar"`
  return { id: id ?? configured?.id ?? "cli", location, networks: configured?.networks }
}

/**
 * `sextant catalog import <url|file> [--id <source id>]`: one pull on the configured store, with a
 * progress bar on stderr (drawn as lines when stderr is not a terminal) and the summary as JSON on
 * stdout. Exit 1 when the pull failed (nothing was written), 2 on bad arguments.
 */
export const catalogImportCommand = (config: Config, args: ReadonlyArray<string>) =>
  Effect.gen(function* () {
    const spec = cliSource(config, args)
    if (typeof spec === "string") {
      process.stderr.write(`${spec}\n`)
      process.exitCode = 2
      return
    }
    const importer = yield* Importer
    const bar = new SingleBar({
      stream: process.stderr,
      noTTYOutput: true,
      format: `import:${spec.id} [{bar}] {value}/{total} items`
    })
    bar.start(0, 0)
    const summary = yield* importer
      .pull(spec, (read, total) => {
        bar.setTotal(total ?? read)
        bar.update(read)
      })
      .pipe(Effect.ensuring(Effect.sync(() => bar.stop())))
    process.stdout.write(`${JSON.stringify(summary)}\n`)
  }).pipe(
    Effect.catchTag("ImportFailed", (e) =>
      Effect.sync(() => {
        process.stderr.write(`import from ${e.source} failed: ${e.reason}\n`)
        process.exitCode = 1
      })
    ),
    Effect.provide(ServicesLive(config))
  )
