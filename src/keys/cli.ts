import { Effect, Either } from "effect"
import { parseArgs as parseArgv } from "node:util"
import type { CommandOutput } from "../receipts/cli.js"
import { type KeyFileError, loadOrCreateBuyerKey, loadOrCreateProbeKey, type StellarKey } from "./stellarKey.js"

export const PROBE_ADDRESS_USAGE = "usage: sextant keys probe-address [--key-file <path>] [--config <file>]"
export const BUYER_NEW_USAGE = "usage: sextant keys buyer-new [--key-file <path>] [--config <file>]"

/** What differs between the key commands: the usage line, the loader and the note for a new file. */
interface KeyRole {
  readonly usage: string
  readonly load: (keyFile: string) => Effect.Effect<StellarKey, KeyFileError>
  readonly createdNote: (key: StellarKey) => string
}

const PROBE: KeyRole = {
  usage: PROBE_ADDRESS_USAGE,
  load: loadOrCreateProbeKey,
  createdNote: (key) => `created the probe key ${key.path} (mode 0600); fund ${key.address} to let economic probes pay`
}

const BUYER: KeyRole = {
  usage: BUYER_NEW_USAGE,
  load: loadOrCreateBuyerKey,
  createdNote: (key) => `created the buyer key ${key.path} (mode 0600); fund ${key.address} to let sextant buy pay`
}

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
 * Prints a key's public address (G...) on stdout so it can be funded, creating the key file (mode
 * 0600) when missing; an existing file is never replaced. `keyFile` is the configured path, which
 * `--key-file` overrides. Notes (created, readable by others) go to stderr; the secret seed is
 * never printed. Exit 0, or 2 on a usage error or an unusable key file.
 */
const keyAddressCommand = async (role: KeyRole, argv: ReadonlyArray<string>, keyFile: string, output: CommandOutput): Promise<number> => {
  const args = parseArgs(argv, keyFile)
  if (Either.isLeft(args)) {
    output.err(`${args.left}\n${role.usage}`)
    return 2
  }
  if (args.right === "help") {
    output.out(role.usage)
    return 0
  }
  const loaded = await Effect.runPromise(Effect.either(role.load(args.right)))
  if (Either.isLeft(loaded)) {
    output.err(loaded.left.message)
    return 2
  }
  const key = loaded.right
  if (key.created) output.err(role.createdNote(key))
  if (key.exposed) output.err(`warning: ${key.path} is readable by group or others; chmod 600 it`)
  output.out(key.address)
  return 0
}

/** `sextant keys probe-address [--key-file PATH]`: the economic probes' payer. */
export const probeAddressCommand = (argv: ReadonlyArray<string>, keyFile: string, output: CommandOutput) =>
  keyAddressCommand(PROBE, argv, keyFile, output)

/**
 * `sextant keys buyer-new [--key-file PATH]`: creates the buyer's key (`buyer.keyFile` by default)
 * and prints its address; run again, it prints the existing key's address and changes nothing.
 */
export const buyerNewCommand = (argv: ReadonlyArray<string>, keyFile: string, output: CommandOutput) =>
  keyAddressCommand(BUYER, argv, keyFile, output)
