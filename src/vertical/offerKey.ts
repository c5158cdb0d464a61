import type { KeyObject } from "node:crypto"
import { dirname, join } from "node:path"
import { Effect } from "effect"
import type { Config } from "../config.js"
import { loadOrCreateEd25519Key } from "../keys/ed25519KeyFile.js"
import { KeyFileError } from "../keys/keyFileError.js"

/**
 * Where a seller run by this process (the vertical, each demo provider) keeps the key it signs
 * offers and receipts with: a file created once and read at every start, so the `did:jwk` signer
 * a buyer sees stays the same across restarts. The files sit beside the receipt signer's key.
 */

/** A seller's key file and the config field that names it, for errors. */
export interface OfferKeyFile {
  readonly field: string
  readonly file: string
}

/** The receipt signer's key folder; `./data` when receipts are signed with an HMAC secret. */
const signerFolder = (config: Pick<Config, "signer">) =>
  "ed25519KeyFile" in config.signer ? dirname(config.signer.ed25519KeyFile) : "./data"

export const verticalOfferKey = (config: Pick<Config, "signer" | "vertical">): OfferKeyFile => ({
  field: "vertical.offerKeyFile",
  file: config.vertical.offerKeyFile ?? join(signerFolder(config), `offer-${config.vertical.name}.key`)
})

export const demoOfferKey = (config: Pick<Config, "signer" | "demo">, providerId: string): OfferKeyFile => ({
  field: "demo.offerKeyFolder",
  file: join(config.demo.offerKeyFolder ?? signerFolder(config), `offer-${providerId}.key`)
})

/** Reads a seller's key, creating it on first start; logs the file's path, never the key. */
export const loadOfferKey = (key: OfferKeyFile): Effect.Effect<KeyObject, KeyFileError> =>
  Effect.gen(function* () {
    const loaded = yield* loadOrCreateEd25519Key(
      key.file,
      (path, reason) => new KeyFileError({ field: key.field, path, reason })
    )
    if (loaded.created) yield* Effect.logInfo(`generated a new offer signing key at ${loaded.path}`)
    if (loaded.exposed) yield* Effect.logWarning(`${loaded.path} is readable by group or others; chmod 600 it`)
    return loaded.privateKey
  })
