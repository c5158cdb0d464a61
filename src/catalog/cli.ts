import { SingleBar } from "cli-progress"
import { Effect, Option } from "effect"
import { ServicesLive } from "../app.js"
import type { Config } from "../config.js"
import { Importer, type ImportSourceSpec } from "./Importer.js"

/**
 * The source an import from the command line writes as: `--id`, else the configured source with
 * that URL (so a manual pull and the schedule agree on what the source lists), else "cli".
 */
export const cliSource = (
  config: Config,
  location: string,
  idFlag: Option.Option<string>
): ImportSourceSpec | string => {
  const id = Option.getOrUndefined(idFlag)
  const configured = config.catalogSources.find((s) => (id !== undefined ? s.id === id : s.url === location))
  if (id !== undefined && !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id))
    return `--id: expected a lowercase id such as "cdp-bazaar"`
  return { id: id ?? configured?.id ?? "cli", location, networks: configured?.networks }
}

/**
 * `sextant catalog import <url|file> [--id <source id>]`: one pull on the configured store, with a
 * progress bar on stderr (drawn as lines when stderr is not a terminal) and the summary as JSON on
 * stdout. Answers the exit code: 1 when the pull failed (nothing was written), 2 on a bad `--id`.
 */
export const catalogImportCommand = (config: Config, location: string, id: Option.Option<string>) =>
  Effect.gen(function* () {
    const spec = cliSource(config, location, id)
    if (typeof spec === "string") {
      process.stderr.write(`${spec}\n`)
      return 2
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
    return 0
  }).pipe(
    Effect.catchTag("ImportFailed", (e) =>
      Effect.sync(() => {
        process.stderr.write(`import from ${e.source} failed: ${e.reason}\n`)
        return 1
      })
    ),
    Effect.provide(ServicesLive(config))
  )
