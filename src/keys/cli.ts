import { Effect, Either } from "effect"
import { parseArgs as parseArgv } from "node:util"
import type { CommandOutput } from "../receipts/cli.js"
import { loadOrCreateProbeKey } from "./probeKey.js"

export const PROBE_ADDRESS_USAGE = "usage: sextant keys probe-address [--key-file <path>] [--config <file>]"

/** `--key-file PATH` (or `--key-file=PATH`) overrides `keyFile`; `-h` asks for the usage. */
const parseArgs = (argv: ReadonlyArray<string>, keyFile: string): Either.Either<string | "help", string> => {
  try {
    const { values } = parseArgv({
      args: [...argv],
      options: { "key-file": { type: "string" }, help: { type: "boolean", short: "h" } },
      strict: true,
      allowPositionals: false
    })
    if (values.help) return Either.right("help")
    if (values["key-file"] === "") return Either.left("--key-file needs a path")
    return Either.right(values["key-file"] ?? keyFile)
  } catch (e) {
    return Either.left((e as Error).message)
  }
}

/**
 * `sextant keys probe-address [--key-file PATH]`, given the arguments after `keys probe-address`:
 * prints the probe key's public address (G...) on stdout so an operator can fund it, creating the
 * key file (mode 0600) when missing. `keyFile` is the configured path, which `--key-file`
 * overrides. Notes (created, readable by others) go to stderr; the secret seed is never printed.
 * Exit 0, or 2 on a usage error or an unusable key file.
 */
export const probeAddressCommand = async (
  argv: ReadonlyArray<string>,
  keyFile: string,
  output: CommandOutput
): Promise<number> => {
  const args = parseArgs(argv, keyFile)
  if (Either.isLeft(args)) {
    output.err(`${args.left}\n${PROBE_ADDRESS_USAGE}`)
    return 2
  }
  if (args.right === "help") {
    output.out(PROBE_ADDRESS_USAGE)
    return 0
  }
  const loaded = await Effect.runPromise(Effect.either(loadOrCreateProbeKey(args.right)))
  if (Either.isLeft(loaded)) {
    output.err(loaded.left.message)
    return 2
  }
  const key = loaded.right
  if (key.created) output.err(`created the probe key ${key.path} (mode 0600); fund ${key.address} to let economic probes pay`)
  if (key.exposed) output.err(`warning: ${key.path} is readable by group or others; chmod 600 it`)
  output.out(key.address)
  return 0
}
