import { Data, Effect } from "effect"
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto"
import { loadOrCreateSecretFile } from "../keys/secretFile.js"

/** The key file could not be read, created or understood. Names the file, never its content. */
export class SignerKeyError extends Data.TaggedError("SignerKeyError")<{
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `signer.ed25519KeyFile: ${this.path}: ${this.reason}`
  }
}

export interface SigningKey {
  readonly privateKey: KeyObject
  readonly path: string
  readonly created: boolean
  /** Group or others may read the file: worth a warning, since the key signs receipts. */
  readonly exposed: boolean
}

/**
 * The key file format is PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), the form OpenSSL and
 * node:crypto read and write: `openssl genpkey -algorithm ed25519` makes one, and
 * `openssl pkey -in FILE -pubout` shows its public half. A missing file is generated (mode 0600,
 * created atomically: `loadOrCreateSecretFile`).
 */
const generatePem = () => generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString()

const parseKey = (path: string, pem: string): Effect.Effect<KeyObject, SignerKeyError> =>
  Effect.try({
    try: () => createPrivateKey(pem),
    catch: () => new SignerKeyError({ path, reason: "not a PKCS#8 PEM private key" })
  }).pipe(
    Effect.filterOrFail(
      (key) => key.asymmetricKeyType === "ed25519",
      (key) => new SignerKeyError({ path, reason: `holds a ${key.asymmetricKeyType ?? "unknown"} key, not ed25519` })
    )
  )

/** Reads the Ed25519 signing key at `keyFile` (relative to the working directory), creating it on first start. */
export const loadOrCreateSigningKey = (keyFile: string): Effect.Effect<SigningKey, SignerKeyError> =>
  loadOrCreateSecretFile(keyFile, generatePem, (path, reason) => new SignerKeyError({ path, reason })).pipe(
    Effect.flatMap(({ path, text, created, exposed }) =>
      Effect.map(parseKey(path, text), (privateKey) => ({ privateKey, path, created, exposed }))
    )
  )
