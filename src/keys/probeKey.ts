import { Keypair } from "@stellar/stellar-sdk"
import { Data, Effect, Redacted } from "effect"
import { loadOrCreateSecretFile } from "./secretFile.js"

/** The probe key file could not be read, created or understood. Names the file, never its content. */
export class ProbeKeyError extends Data.TaggedError("ProbeKeyError")<{
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `economicProbes.payerKeyFile: ${this.path}: ${this.reason}`
  }
}

/** The operator's probe account: the key economic probes pay with (never a buyer's). */
export interface ProbeKey {
  /** The public account id (G...): what an operator funds. */
  readonly address: string
  /**
   * The signing keypair, redacted: a `Keypair` serialises its secret seed, so it is kept where
   * logging, `JSON.stringify` and `String()` print `<redacted>` instead. `Redacted.value` opens it.
   */
  readonly signer: Redacted.Redacted<Keypair>
  readonly path: string
  readonly created: boolean
  /** Group or others may read the file: worth a warning, since the key spends the probe budget. */
  readonly exposed: boolean
}

/**
 * The file format is the Stellar secret seed (`S...`, the strkey every Stellar wallet imports and
 * exports) on one line, surrounding whitespace ignored. A missing file is generated with a random
 * seed, mode 0600, created atomically (`loadOrCreateSecretFile`, shared with the receipt signer).
 */
export const loadOrCreateProbeKey = (keyFile: string): Effect.Effect<ProbeKey, ProbeKeyError> =>
  loadOrCreateSecretFile(
    keyFile,
    () => `${Keypair.random().secret()}\n`,
    (path, reason) => new ProbeKeyError({ path, reason })
  ).pipe(
    Effect.flatMap(({ path, text, created, exposed }) =>
      Effect.try({
        try: () => Keypair.fromSecret(text.trim()),
        // The SDK's message may quote the input: replaced by a fixed reason.
        catch: () => new ProbeKeyError({ path, reason: "not a Stellar secret seed (one line, S...)" })
      }).pipe(Effect.map((keypair) => ({ address: keypair.publicKey(), signer: Redacted.make(keypair), path, created, exposed })))
    )
  )
