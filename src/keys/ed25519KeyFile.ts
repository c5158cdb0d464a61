import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto"
import { Effect } from "effect"
import { loadOrCreateSecretFile } from "./secretFile.js"

/** An Ed25519 private key read from its file; the key itself is never printed. */
export interface Ed25519KeyFile {
  readonly privateKey: KeyObject
  readonly path: string
  readonly created: boolean
  /** Group or others may read the file: worth a warning, since the key signs for this service. */
  readonly exposed: boolean
}

/**
 * The key file format is PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), the form OpenSSL and
 * node:crypto read and write: `openssl genpkey -algorithm ed25519` makes one, and
 * `openssl pkey -in FILE -pubout` shows its public half. A missing file is generated (mode 0600,
 * created atomically: `loadOrCreateSecretFile`).
 */
const generatePem = () => generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString()

const parseKey = <E>(
  path: string,
  pem: string,
  onError: (path: string, reason: string) => E
): Effect.Effect<KeyObject, E> =>
  Effect.try({
    try: () => createPrivateKey(pem),
    catch: () => onError(path, "not a PKCS#8 PEM private key")
  }).pipe(
    Effect.filterOrFail(
      (key) => key.asymmetricKeyType === "ed25519",
      (key) => onError(path, `holds a ${key.asymmetricKeyType ?? "unknown"} key, not ed25519`)
    )
  )

/**
 * Reads the Ed25519 key at `keyFile` (relative to the working directory), creating it when
 * missing. Failures become `onError(path, reason)`; a reason never quotes the file.
 */
export const loadOrCreateEd25519Key = <E>(
  keyFile: string,
  onError: (path: string, reason: string) => E
): Effect.Effect<Ed25519KeyFile, E> =>
  loadOrCreateSecretFile(keyFile, generatePem, onError).pipe(
    Effect.flatMap(({ path, text, created, exposed }) =>
      Effect.map(parseKey(path, text, onError), (privateKey) => ({ privateKey, path, created, exposed }))
    )
  )
