import { randomBytes } from "node:crypto"
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync
} from "node:fs"
import { dirname, resolve } from "node:path"
import { Effect } from "effect"

/** A private key file as read from disk: its text is the secret, so nothing here prints it. */
export interface SecretFile {
  /** Absolute path. */
  readonly path: string
  readonly text: string
  /** This call generated the file. */
  readonly created: boolean
  /** Group or others may read the file: worth a warning, since it holds a private key. */
  readonly exposed: boolean
}

const errnoOf = (e: unknown) => (e as NodeJS.ErrnoException).code ?? String(e)

/**
 * Writes `content` to a missing `path` with mode 0600, in a folder created 0700. The content goes
 * to a private temporary file first and is hard-linked into place, so a concurrent start (server
 * and `sextant mcp` on one data folder) either wins the link or later reads the winner's complete
 * file: never a half-written one, never two different keys. Answers whether this call won.
 */
const createSecretFile = (path: string, content: string) => {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const temporary = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`
  const fd = openSync(temporary, "wx", 0o600)
  try {
    writeSync(fd, content)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temporary, path)
    return true
  } catch (e) {
    if (errnoOf(e) !== "EEXIST") throw e
    return false
  } finally {
    unlinkSync(temporary)
  }
}

const readIfPresent = (path: string): string | null => {
  try {
    return readFileSync(path, "utf8")
  } catch (e) {
    if (errnoOf(e) === "ENOENT") return null
    throw e
  }
}

/**
 * Reads the key file at `keyFile` (relative to the working directory), creating it from
 * `generate()` when missing. I/O failures become `onError(path, reason)`, whose reason names the
 * errno only: never the file's content.
 */
export const loadOrCreateSecretFile = <E>(
  keyFile: string,
  generate: () => string,
  onError: (path: string, reason: string) => E
): Effect.Effect<SecretFile, E> => {
  const path = resolve(keyFile)
  const io = <A>(f: () => A) =>
    Effect.try({ try: f, catch: (e) => onError(path, `cannot read or create: ${errnoOf(e)}`) })
  return Effect.gen(function* () {
    const existing = yield* io(() => readIfPresent(path))
    const created = existing === null ? yield* io(() => createSecretFile(path, generate())) : false
    const text = existing ?? (yield* io(() => readFileSync(path, "utf8")))
    const exposed = yield* io(() => (statSync(path).mode & 0o077) !== 0)
    return { path, text, created, exposed }
  })
}
