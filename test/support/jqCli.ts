import { chmodSync, mkdirSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { raw, version } from "jq-wasm"

/**
 * `jq` for tests that run shell pipelines as a reader types them (the README tour): jq itself,
 * compiled to WebAssembly and shipped on npm (jq-wasm, built from jq's own sources by one of its
 * maintainers), so no system jq is needed. As a command it reads stdin and takes jq's own flags
 * and one filter, as `curl ... | jq -r '<filter>'` does; file arguments are not supported.
 * jq-wasm trims the output it captured: the newline jq ends its output with is put back.
 */

/** Writes an executable `jq` into `folder` that runs this file with the running bun; put `folder` first on PATH. */
export const installJq = (folder: string): string => {
  mkdirSync(folder, { recursive: true })
  const path = join(folder, "jq")
  writeFileSync(path, `#!/bin/sh\nexec '${process.execPath}' '${import.meta.path}' "$@"\n`)
  chmodSync(path, 0o755)
  return folder
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  if (args.includes("--version")) {
    process.stdout.write(`${await version()}\n`)
    process.exit(0)
  }
  const filterAt = args.findIndex((a) => !a.startsWith("-"))
  if (filterAt < 0 || args.slice(filterAt + 1).some((a) => !a.startsWith("-"))) {
    process.stderr.write("usage: jq [flags] <filter> (input on stdin; files are not supported here)\n")
    process.exit(2)
  }
  const flags = args.filter((_, i) => i !== filterAt)
  const result = await raw(await Bun.stdin.text(), args[filterAt]!, flags)
  const joined = flags.some((f) => f === "--join-output" || f === "--raw-output0" || /^-[a-zA-Z]*j/.test(f))
  process.stdout.write(result.stdout === "" || joined ? result.stdout : `${result.stdout}\n`)
  process.stderr.write(result.stderr === "" ? "" : `${result.stderr}\n`)
  process.exit(result.exitCode)
}
