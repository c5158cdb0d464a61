import { Effect, Either } from "effect"
import type { CommandOutput } from "../lifecycle/commandOutput.js"
import type { KeyFileError } from "./keyFileError.js"
import {
  loadOrCreateBuyerKey,
  loadOrCreateFacilitatorKey,
  loadOrCreateProbeKey,
  type StellarKey
} from "./stellarKey.js"

/** What differs between the key commands: the loader and the note for a new file. */
interface KeyRole {
  readonly load: (keyFile: string) => Effect.Effect<StellarKey, KeyFileError>
  readonly createdNote: (key: StellarKey) => string
}

const PROBE: KeyRole = {
  load: loadOrCreateProbeKey,
  createdNote: (key) => `created the probe key ${key.path} (mode 0600); fund ${key.address} to let economic probes pay`
}

const BUYER: KeyRole = {
  load: loadOrCreateBuyerKey,
  createdNote: (key) => `created the buyer key ${key.path} (mode 0600); fund ${key.address} to let sextant buy pay`
}

const FACILITATOR: KeyRole = {
  load: (keyFile) => loadOrCreateFacilitatorKey("feeAccountKeyFile", keyFile),
  createdNote: (key) =>
    `created the fee account key ${key.path} (mode 0600); fund ${key.address} with XLM to let the embedded facilitator settle`
}

/**
 * Prints a key's public address (G...) on stdout so it can be funded, creating the key file (mode
 * 0600) when missing; an existing file is never replaced. `keyFile` is `--key-file`, else the
 * configured path. Notes (created, readable by others) go to stderr; the secret seed is
 * never printed. Exit 0, or 2 on a usage error or an unusable key file.
 */
const keyAddressCommand = async (role: KeyRole, keyFile: string, output: CommandOutput): Promise<number> => {
  if (keyFile === "") {
    output.err("--key-file needs a path")
    return 2
  }
  const loaded = await Effect.runPromise(Effect.either(role.load(keyFile)))
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
export const probeAddressCommand = (keyFile: string, output: CommandOutput) => keyAddressCommand(PROBE, keyFile, output)

/**
 * `sextant keys buyer-new [--key-file PATH]`: creates the buyer's key (`buyer.keyFile` by default)
 * and prints its address; run again, it prints the existing key's address and changes nothing.
 */
export const buyerNewCommand = (keyFile: string, output: CommandOutput) => keyAddressCommand(BUYER, keyFile, output)

/**
 * `sextant keys facilitator-new [--key-file PATH]`: creates the embedded facilitator's fee account
 * key (the first embedded entry's `feeAccountKeyFile` by default) and prints the address to fund.
 */
export const facilitatorNewCommand = (keyFile: string, output: CommandOutput) =>
  keyAddressCommand(FACILITATOR, keyFile, output)
