import { Data, type Effect } from "effect"
import { type Ed25519KeyFile, loadOrCreateEd25519Key } from "../keys/ed25519KeyFile.js"

/** The key file could not be read, created or understood. Names the file, never its content. */
export class SignerKeyError extends Data.TaggedError("SignerKeyError")<{
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `signer.ed25519KeyFile: ${this.path}: ${this.reason}`
  }
}

/** The receipt signing key (PKCS#8 PEM, `keys/ed25519KeyFile.ts`). */
export type SigningKey = Ed25519KeyFile

/** Reads the Ed25519 signing key at `keyFile` (relative to the working directory), creating it on first start. */
export const loadOrCreateSigningKey = (keyFile: string): Effect.Effect<SigningKey, SignerKeyError> =>
  loadOrCreateEd25519Key(keyFile, (path, reason) => new SignerKeyError({ path, reason }))
