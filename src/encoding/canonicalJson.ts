import { Data, Either } from "effect"

/**
 * Why a value has no canonical form. Signing must never guess: NaN, Infinity, a lone surrogate
 * or a cycle would serialise differently (or not at all) in another implementation.
 */
export class CanonicalJsonError extends Data.TaggedError("CanonicalJsonError")<{
  /** JSON-pointer-like path to the offending value, "" for the root. */
  readonly path: string
  readonly reason: string
}> {
  override get message() {
    return `${this.path === "" ? "(root)" : this.path}: ${this.reason}`
  }
}

/**
 * Deepest nesting of objects and arrays accepted (the root container is level 1). A receipt nests
 * a handful of levels; the bound keeps the recursion far from the engine's stack limit, so a
 * hostile document (a receipt file, a caller other than HTTP, whose bodies src/http/body.ts
 * bounds alike) is refused with a typed error instead of a RangeError.
 */
export const MAX_CANONICAL_DEPTH = 64

/** With the `u` flag a well-formed pair is one code point, so only unpaired halves match. */
const LONE_SURROGATE = /\p{Surrogate}/u

/** JSON pointer (RFC 6901) of the value being written, built only when a value is refused. */
const pointer = (path: ReadonlyArray<string | number>) =>
  path.map((key) => `/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("")

const isPlainObject = (value: object): value is Record<string, unknown> => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * Canonical JSON as SPEC "Receipt signature rules" rule 2 states it, which is RFC 8785 (JCS) for
 * JSON data: object keys sorted by UTF-16 code unit, members whose value is undefined dropped,
 * arrays in order with undefined written as null, numbers in ECMAScript shortest round-trip form
 * (JSON.stringify's, which RFC 8785 adopts, -0 becoming 0), strings with JSON.stringify's minimal
 * escaping, no whitespace. Anything that is not JSON data, or nested deeper than
 * MAX_CANONICAL_DEPTH, is refused with a typed error.
 */
export const canonicalize = (value: unknown): Either.Either<string, CanonicalJsonError> => {
  const ancestors = new Set<object>()
  const path: Array<string | number> = []
  // The refusal is kept, so the catch below tells it from any other throw by identity.
  let refused: CanonicalJsonError | undefined
  const fail = (reason: string): never => {
    refused = new CanonicalJsonError({ path: pointer(path), reason })
    throw refused
  }
  const str = (s: string) => {
    // JSON.stringify would escape a lone surrogate (as \udc00, say); RFC 8785 section 3.2.2.2 forbids it.
    if (LONE_SURROGATE.test(s)) fail("string contains a lone surrogate (not valid Unicode)")
    return JSON.stringify(s)
  }
  const member = (key: string | number, v: unknown) => {
    path.push(key)
    const out = write(v)
    path.pop()
    return out
  }
  const write = (v: unknown): string => {
    switch (typeof v) {
      case "undefined":
        return "null"
      case "boolean":
        return v ? "true" : "false"
      case "number":
        return Number.isFinite(v) ? JSON.stringify(v) : fail(`non-finite number ${v} has no JSON form`)
      case "string":
        return str(v)
      case "object": {
        if (v === null) return "null"
        // `path` holds one key per enclosing container, so this container is level path.length + 1.
        if (path.length >= MAX_CANONICAL_DEPTH) return fail(`nested deeper than ${MAX_CANONICAL_DEPTH} levels`)
        if (ancestors.has(v)) return fail("cyclic structure")
        ancestors.add(v)
        let out: string
        if (Array.isArray(v)) {
          out = `[${v.map((item, i) => member(i, item)).join(",")}]`
        } else if (isPlainObject(v)) {
          // Array.prototype.sort's default order compares UTF-16 code units, as RFC 8785 requires.
          const keys = Object.keys(v)
            .filter((k) => v[k] !== undefined)
            .sort()
          out = `{${keys
            .map((k) => {
              path.push(k)
              const name = str(k)
              path.pop()
              return `${name}:${member(k, v[k])}`
            })
            .join(",")}}`
        } else {
          return fail(`${Object.prototype.toString.call(v)} is not plain JSON data`)
        }
        ancestors.delete(v)
        return out
      }
      default:
        return fail(`a ${typeof v} is not JSON data`)
    }
  }
  try {
    return Either.right(write(value))
  } catch (e) {
    if (refused !== undefined && e === refused) return Either.left(refused)
    throw e
  }
}

const utf8 = new TextEncoder()

/** The canonical form as UTF-8 bytes: what gets signed. */
export const canonicalBytes = (value: unknown): Either.Either<Uint8Array, CanonicalJsonError> =>
  Either.map(canonicalize(value), (text) => utf8.encode(text))
