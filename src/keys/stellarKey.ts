import { existsSync } from "node:fs"
import { resolve } from "node:path"
import { Keypair } from "@stellar/stellar-sdk"
import { Effect, Redacted } from "effect"
import { KeyFileError } from "./keyFileError.js"
import { loadOrCreateSecretFile } from "./secretFile.js"

/** A Stellar account this process signs payments with: the operator's probe key or a buyer's key. */
export interface StellarKey {
  /** The public account id (G...): what gets funded. */
  readonly address: string
  /**
   * The signing keypair, redacted: a `Keypair` serialises its secret seed, so it is kept where
   * logging, `JSON.stringify` and `String()` print `<redacted>` instead. `Redacted.value` opens it.
   */
  readonly signer: Redacted.Redacted<Keypair>
  readonly path: string
  readonly created: boolean
  /** Group or others may read the file: worth a warning, since the key spends money. */
  readonly exposed: boolean
}

/**
 * The file format is the Stellar secret seed (`S...`, the strkey every Stellar wallet imports and
 * exports) on one line, surrounding whitespace ignored. A missing file is generated with a random
 * seed, mode 0600, created atomically (`loadOrCreateSecretFile`, shared with the receipt signer).
 */
const loadOrCreateStellarKey = (field: string, keyFile: string): Effect.Effect<StellarKey, KeyFileError> =>
  loadOrCreateSecretFile(
    keyFile,
    () => `${Keypair.random().secret()}\n`,
    (path, reason) => new KeyFileError({ field, path, reason })
  ).pipe(
    Effect.flatMap(({ path, text, created, exposed }) =>
      Effect.try({
        try: () => Keypair.fromSecret(text.trim()),
        // The SDK's message may quote the input: replaced by a fixed reason.
        catch: () => new KeyFileError({ field, path, reason: "not a Stellar secret seed (one line, S...)" })
      }).pipe(
        Effect.map((keypair) => ({
          address: keypair.publicKey(),
          signer: Redacted.make(keypair),
          path,
          created,
          exposed
        }))
      )
    )
  )

/** The operator's probe account: the key economic probes pay with (never a buyer's). */
export const loadOrCreateProbeKey = (keyFile: string) => loadOrCreateStellarKey("economicProbes.payerKeyFile", keyFile)

/**
 * A buyer's own account: the key `sextant buy` and the MCP buyer tool sign with. It is read on the
 * buyer's machine only; what leaves it is the signed authorisation, never the seed.
 */
export const loadOrCreateBuyerKey = (keyFile: string) => loadOrCreateStellarKey("buyer.keyFile", keyFile)

/**
 * The embedded facilitator's fee account: it pays every settle's fee (and, without channels, is
 * their source). Created on first start like the signer's key; `field` names the config entry.
 */
export const loadOrCreateFacilitatorKey = (field: string, keyFile: string) => loadOrCreateStellarKey(field, keyFile)

/** A buyer key that must already exist: `buy` never creates an unfunded key on the way. */
export const readBuyerKey = (keyFile: string): Effect.Effect<StellarKey, KeyFileError> =>
  existsSync(resolve(keyFile))
    ? loadOrCreateBuyerKey(keyFile)
    : Effect.fail(
        new KeyFileError({
          field: "buyer.keyFile",
          path: resolve(keyFile),
          reason: "missing: create it with sextant keys buyer-new"
        })
      )
