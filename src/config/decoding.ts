import { readFileSync } from "node:fs"
import { Either, ParseResult, Schema } from "effect"
import { CatalogEntry } from "../domain/resources.js"

/** Reading and decoding the config file and catalogs into one-line errors that name the field and never quote a secret. */

/** One line naming the field, as an operator sees it when start-up stops. */
export class ConfigError {
  readonly _tag = "ConfigError"
  constructor(
    readonly field: string,
    readonly reason: string
  ) {}
  get line() {
    return `config error: ${this.field}: ${this.reason}`
  }
}

export const decodeOptions = { errors: "first", onExcessProperty: "error" } as const

const fieldPath = (path: ReadonlyArray<PropertyKey>) =>
  path.length === 0
    ? "(root)"
    : path
        .map((p) => (typeof p === "number" ? `[${p}]` : String(p)))
        .join(".")
        .replace(/\.\[/g, "[")

/**
 * Fields whose values are secrets: a schema message would quote the value, so it is replaced.
 * RPC and Horizon URLs count: a provider's URL often carries its API key.
 */
const SECRET_FIELDS = new Set([
  "apiKey",
  "hmacSecret",
  "facilitatorApiKey",
  "database",
  "sorobanRpcUrl",
  "horizonUrl",
  "otlpEndpoint"
])

export const firstIssue = (error: ParseResult.ParseError, prefix = ""): ConfigError => {
  // A union (an HTTP or an embedded facilitator entry) reports each member's issue: the one that
  // got furthest into the value, and a wrong value before a missing field (the other member's
  // discriminator), names what the operator got wrong.
  const rank = (i: ParseResult.ArrayFormatterIssue) => i.path.length * 2 + (i._tag === "Missing" ? 0 : 1)
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error).reduce<ParseResult.ArrayFormatterIssue | undefined>(
    (best, next) => (best === undefined || rank(next) > rank(best) ? next : best),
    undefined
  )
  const path = issue?.path ?? []
  const field = fieldPath(path)
  const secret = path.some((p) => SECRET_FIELDS.has(String(p)))
  const message = secret ? "invalid value (not shown: it may be a secret)" : (issue?.message ?? "invalid")
  return new ConfigError(prefix ? (field === "(root)" ? prefix : `${prefix}.${field}`) : field, message)
}

export const decodeCatalog = (input: unknown, field: string): Either.Either<ReadonlyArray<CatalogEntry>, ConfigError> =>
  Schema.decodeUnknownEither(Schema.Array(CatalogEntry))(input, decodeOptions).pipe(
    Either.mapLeft((e) => firstIssue(e, field))
  )

export const readText = (path: string, field: string): Either.Either<string, ConfigError> => {
  try {
    return Either.right(readFileSync(path, "utf8"))
  } catch (e) {
    return Either.left(new ConfigError(field, `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? "error"}`))
  }
}

export const parseJson = (text: string, path: string, field: string): Either.Either<unknown, ConfigError> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (e) {
    return Either.left(new ConfigError(field, `${path} is not valid JSON: ${(e as Error).message}`))
  }
}

export const readJson = (path: string, field: string): Either.Either<unknown, ConfigError> =>
  Either.flatMap(readText(path, field), (text) => parseJson(text, path, field))

export const parsePort = (value: string, field: string): Either.Either<number, ConfigError> => {
  const port = Number(value)
  return Number.isInteger(port) && port >= 0 && port <= 65535 && /^\d+$/.test(value)
    ? Either.right(port)
    : Either.left(new ConfigError(field, `expected a port number 0-65535, got "${value}"`))
}
