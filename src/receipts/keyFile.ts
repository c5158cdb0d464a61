import { Data, Effect } from "effect"
import { createPrivateKey, generateKeyPairSync, type KeyObject, randomBytes } from "node:crypto"
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from "node:fs"
import { dirname, resolve } from "node:path"

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

const errno = (e: unknown) => (e as NodeJS.ErrnoException).code ?? String(e)

/**
 * The key file format is PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"), the form OpenSSL and
 * node:crypto read and write: `openssl genpkey -algorithm ed25519` makes one, and
 * `openssl pkey -in FILE -pubout` shows its public half.
 *
 * A missing file is generated with mode 0600 in a folder created 0700. The new key is written to
 * a private temporary file and hard-linked into place, so a concurrent start (server and `sextant
 * mcp` on one data folder) either wins the link or reads the winner's complete file.
 */
const createKeyFile = (path: string) => {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const pem = generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" })
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
  const fd = openSync(temporary, "wx", 0o600)
  try {
    writeSync(fd, pem)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temporary, path)
    return true
  } catch (e) {
    if (errno(e) !== "EEXIST") throw e
    return false
  } finally {
    unlinkSync(temporary)
  }
}

const readKeyFile = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8")
  } catch (e) {
    if (errno(e) === "ENOENT") return null
    throw e
  }
}

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
export const loadOrCreateSigningKey = (keyFile: string): Effect.Effect<SigningKey, SignerKeyError> => {
  const path = resolve(keyFile)
  const io = <A>(f: () => A) =>
    Effect.try({ try: f, catch: (e) => new SignerKeyError({ path, reason: `cannot read or create: ${errno(e)}` }) })
  return Effect.gen(function* () {
    const existing = yield* io(() => readKeyFile(path))
    const created = existing === null ? yield* io(() => createKeyFile(path)) : false
    const pem = existing ?? (yield* io(() => readFileSync(path, "utf8")))
    const privateKey = yield* parseKey(path, pem)
    const exposed = yield* io(() => (statSync(path).mode & 0o077) !== 0)
    return { privateKey, path, created, exposed }
  })
}
