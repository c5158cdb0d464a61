import type { Config } from "../config.js"

/**
 * What every text that came from outside is passed through before it is stored, logged or
 * answered: a backend may echo the request it got (the `Authorization` header holding our key
 * included) in an error body, and that body is quoted in error messages, the journal,
 * `lastError` and logs. One function does it for every path, so no path can forget a pattern.
 */
export const REDACTED = "[REDACTED]"

/** Secrets shorter than this are not searched for by value: a short one would blank ordinary words. */
const MIN_SECRET_LENGTH = 8

/**
 * Shapes that are secrets whatever the config says: a header or field that carries credentials
 * (its value, with an auth scheme if any), a free-standing `Bearer <token>` or `Basic <base64>`, credentials in a URL
 * and Stellar secret seeds (`S` + 55 base32 characters).
 */
const CREDENTIAL_FIELD =
  /((?:proxy-)?authorization|x-api-key|api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|client[-_]?secret|secret|password|passwd)(["']?\s*[:=]\s*["']?)((?:bearer|basic|token|digest)\s+)?(?:\[REDACTED\]|[^"'\s,;&}\][]+)/gi
// "Basic" only before something base64-looking with a digit or padding, so prose ("basic checks") is left alone.
const AUTH_SCHEME = /\b(bearer|Basic(?=\s+[A-Za-z0-9+/]*[0-9+/=]))(\s+)[A-Za-z0-9._~+/=-]{8,}/gi
const URL_CREDENTIALS = /(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s:@]+(?::[^/\s@]*)?@/gi
const STELLAR_SEED = /\bS[A-Z2-7]{55}\b/g

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The forms a secret takes once echoed: as is, JSON-escaped, URL-encoded. */
const forms = (secret: string) => [
  ...new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])
]

export interface Redactor {
  /** The text with every secret replaced by `[REDACTED]`. */
  readonly text: (text: string) => string
  /** Strings inside a JSON-like value (arrays, plain objects, errors) redacted; the shape kept. */
  readonly value: <A>(value: A) => A
}

export const makeRedactor = (secrets: ReadonlyArray<string>): Redactor => {
  const known = [...new Set(secrets.filter((s) => s.length >= MIN_SECRET_LENGTH).flatMap(forms))]
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b.length - a.length)
  const byValue = known.length === 0 ? null : new RegExp(known.map(escapeRegExp).join("|"), "g")

  const text = (input: string): string => {
    let out = byValue === null ? input : input.replace(byValue, REDACTED)
    out = out.replace(CREDENTIAL_FIELD, (_, field: string, separator: string) => `${field}${separator}${REDACTED}`)
    out = out.replace(AUTH_SCHEME, (_, scheme: string, space: string) => `${scheme}${space}${REDACTED}`)
    out = out.replace(URL_CREDENTIALS, (_, scheme: string) => `${scheme}${REDACTED}@`)
    return out.replace(STELLAR_SEED, REDACTED)
  }

  const value = <A>(input: A): A => redactDeep(input, text, new WeakMap(), 0) as A
  return { text, value }
}

/** Deep enough for any answer a backend sends; anything deeper is left as it is rather than walked forever. */
const MAX_DEPTH = 16

const redactDeep = (
  input: unknown,
  text: (s: string) => string,
  seen: WeakMap<object, unknown>,
  depth: number
): unknown => {
  if (typeof input === "string") return text(input)
  if (typeof input !== "object" || input === null || depth > MAX_DEPTH) return input
  const cached = seen.get(input)
  if (cached !== undefined) return cached
  if (Array.isArray(input)) {
    const out: Array<unknown> = []
    seen.set(input, out)
    for (const item of input) out.push(redactDeep(item, text, seen, depth + 1))
    return out
  }
  const proto = Object.getPrototypeOf(input)
  const isError = input instanceof Error
  if (!isError && proto !== Object.prototype && proto !== null) return input
  // Errors keep their prototype (so `instanceof` and tags still hold) and get their message and stack redacted.
  const out: Record<string, unknown> = Object.create(proto)
  seen.set(input, out)
  for (const [key, field] of Object.entries(input)) out[key] = redactDeep(field, text, seen, depth + 1)
  if (isError) {
    for (const key of ["message", "stack"] as const) {
      const own = Object.getOwnPropertyDescriptor(input, key)
      if (own !== undefined && typeof own.value === "string") {
        Object.defineProperty(out, key, { ...own, value: text(own.value) })
      }
    }
    if ("cause" in input && !Object.prototype.propertyIsEnumerable.call(input, "cause")) {
      Object.defineProperty(out, "cause", {
        value: redactDeep(input.cause, text, seen, depth + 1),
        configurable: true,
        writable: true
      })
    }
  }
  return out
}

/** The password of a Postgres URL, the only secret a database setting holds. */
const databasePassword = (database: string): Array<string> => {
  try {
    const password = new URL(database).password
    return password === "" ? [] : [password, decodeURIComponent(password)]
  } catch {
    return []
  }
}

/**
 * What in a configured URL may be a provider's key: its password, every query value (`?apiKey=`,
 * `?token=`), and path segments that look like tokens (16 or more URL-safe characters, or 8 or more
 * mixing letters and digits, as `/v1/a1b2c3d4e5` of an RPC provider). Path words such as
 * `discovery` or `resources` are not: they would blank ordinary text.
 */
export const urlSecrets = (url: string | null | undefined): Array<string> => {
  if (url === null || url === undefined) return []
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return []
  }
  const tokenLike = (part: string) =>
    /^[A-Za-z0-9._~+=-]{16,}$/.test(part) || (part.length >= 8 && /\d/.test(part) && /[A-Za-z]/.test(part))
  const decoded = (part: string) => {
    try {
      return decodeURIComponent(part)
    } catch {
      return part
    }
  }
  return [
    ...(parsed.password === "" ? [] : [decoded(parsed.password)]),
    ...[...parsed.searchParams.values()].filter((value) => value !== ""),
    ...parsed.pathname.split("/").map(decoded).filter(tokenLike)
  ]
}

/** The configured URLs that may carry a provider's key in their path or query. */
const configuredUrls = (config: Pick<Config, "vertical" | "ledger" | "telemetry" | "catalogSources">) => [
  config.ledger.sorobanRpcUrl,
  config.ledger.horizonUrl,
  config.vertical.horizonUrl,
  config.vertical.sorobanRpcUrl,
  config.vertical.facilitatorUrl,
  config.telemetry.otlpEndpoint,
  ...config.catalogSources.map((source) => source.url)
]

export type SecretsConfig = Pick<
  Config,
  "facilitators" | "signer" | "vertical" | "database" | "ledger" | "telemetry" | "catalogSources"
>

/**
 * Every secret the config holds in clear: facilitator keys, the HMAC signing secret, the key the
 * vertical presents, the database password, and tokens in the path or query of the ledger's, the
 * vertical's, the collector's and the catalog sources' URLs. API keys are configured only as
 * hashes, so they are caught by shape (`Authorization`, `Bearer ...`), like any key this service
 * never saw.
 */
export const secretsOf = (config: SecretsConfig): Array<string> => [
  ...config.facilitators.flatMap((f) => ("apiKey" in f && f.apiKey !== undefined ? [f.apiKey] : [])),
  ...("hmacSecret" in config.signer ? [config.signer.hmacSecret] : []),
  ...(config.vertical.facilitatorApiKey === null ? [] : [config.vertical.facilitatorApiKey]),
  ...databasePassword(config.database),
  ...configuredUrls(config).flatMap(urlSecrets)
]

/** The redactor for a deployment's config. */
export const redactorFor = (config: SecretsConfig) => makeRedactor(secretsOf(config))
