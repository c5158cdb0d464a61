import { Duration, Effect, Either, Schema } from "effect"
import type { FacilitatorBackend } from "../config.js"
import { type FacilitatorStatus, SettleResponse, VerifyResponse } from "../domain/x402.js"
import type { Redactor } from "../redaction/redact.js"

/**
 * How one call to one backend went wrong. The distinction matters for settle: only some failures
 * prove that the backend did not act on the request (see `FacilitatorPool`).
 * - Unreachable: no connection was made, so the request never arrived.
 * - TimedOut: no complete answer within the time limit; the backend may still be working on it.
 * - Transport: the connection broke after the request may have arrived.
 * - HttpStatus: the backend answered with an error status and no answer of the expected shape.
 * - Malformed: the backend answered success but with a body that is not the expected shape.
 */
export type BackendFailureKind = "Unreachable" | "TimedOut" | "Transport" | "HttpStatus" | "Malformed"

export class BackendFailure extends Schema.TaggedError<BackendFailure>()("BackendFailure", {
  backendId: Schema.String,
  kind: Schema.Literal("Unreachable", "TimedOut", "Transport", "HttpStatus", "Malformed"),
  status: Schema.NullOr(Schema.Int),
  detail: Schema.String
}) {
  override get message() {
    return `${this.backendId}: ${this.detail}`
  }
}

/** What `GET /supported` answers, read leniently: kinds are filtered later, the rest is optional. */
export const RawSupported = Schema.Struct({
  kinds: Schema.Array(
    Schema.Struct({
      x402Version: Schema.Int,
      scheme: Schema.String,
      network: Schema.String,
      extra: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
    })
  ),
  extensions: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  signers: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.Unknown }), { default: () => ({}) })
})
export type RawSupported = typeof RawSupported.Type

const EXCERPT = 200

/** A short, single-line excerpt of a backend's answer for error messages and the journal. */
const excerpt = (text: string) => {
  const compact = text.replace(/\s+/g, " ").trim()
  return compact.length <= EXCERPT ? compact : `${compact.slice(0, EXCERPT - 3)}...`
}

const isConnectionRefused = (cause: unknown): boolean => {
  const code = (cause as { code?: unknown } | null)?.code
  return (
    code === "ECONNREFUSED" || code === "ConnectionRefused" || code === "ENOTFOUND" || code === "FailedToOpenSocket"
  )
}

// Built once: a decoder built per call recompiles the schema's parser each time.
const decodeSupported = Schema.decodeUnknownEither(RawSupported)
const decodeVerify = Schema.decodeUnknownEither(VerifyResponse)
const decodeSettle = Schema.decodeUnknownEither(SettleResponse)

/** Parses a body read as text, keeping the text so a non-JSON error page can still be quoted. */
const parseBody = (text: string) => {
  try {
    return { text, json: Either.right(JSON.parse(text) as unknown) }
  } catch {
    return { text, json: Either.left("not JSON") }
  }
}

/** Where an exchange with a backend broke: before an answer began (the request) or while reading it. */
interface Broken {
  readonly stage: "request" | "answer"
  readonly cause: unknown
}

/**
 * One exchange over the platform's `fetch`: the status and the whole body as text. The request
 * and the body read share the abort signal Effect gives, so an interruption (the caller's timeout)
 * stops both. A plain `fetch` rather than the Effect HttpClient: the client's request and response
 * wrappers cost about half a millisecond per call, most of what a settle added over the backend
 * (docs/decisions.md, Settle overhead).
 */
const exchange = (url: string, init: RequestInit) =>
  Effect.tryPromise({
    try: async (signal) => {
      const response = await fetch(url, { ...init, redirect: "manual", signal }).catch((cause: unknown) => {
        throw { stage: "request", cause } satisfies Broken
      })
      const text = await response.text().catch((cause: unknown) => {
        throw { stage: "answer", cause } satisfies Broken
      })
      return { status: response.status, body: parseBody(text) }
    },
    catch: (broken) => broken as Broken
  })

const messageOf = (cause: unknown) => (cause instanceof Error ? cause.message : String(cause))

/**
 * One backend's HTTP API. The apiKey, when configured, goes to this backend as
 * `Authorization: Bearer` and nowhere else. Everything the backend says (error bodies quoted in a
 * failure, the messages inside its answers) passes through `redactor` here, at the boundary, so a
 * backend that echoes the request cannot put a key into an answer, the journal or a log. No trace
 * context is sent: a backend is outside this service's traces.
 */
export const makeBackendClient = (backend: FacilitatorBackend, redactor: Redactor): BackendClient => {
  const base = backend.url.replace(/\/+$/, "")
  // Redacted before it is cut to an excerpt: a cut could otherwise leave half a key no pattern matches.
  const quote = (text: string) => excerpt(redactor.text(text))
  const fail = (kind: BackendFailureKind, detail: string, status: number | null = null) =>
    new BackendFailure({ backendId: backend.id, kind, status, detail: redactor.text(detail) })
  const authorization: Record<string, string> =
    backend.apiKey === undefined ? {} : { authorization: `Bearer ${backend.apiKey}` }
  const get = (path: string): [string, RequestInit] => [`${base}${path}`, { method: "GET", headers: authorization }]
  const post = (path: string, body: unknown): [string, RequestInit] => [
    `${base}${path}`,
    { method: "POST", headers: { ...authorization, "content-type": "application/json" }, body: JSON.stringify(body) }
  ]

  const broken = ({ stage, cause }: Broken) =>
    stage === "answer"
      ? fail("Transport", `reading the answer failed: ${quote(messageOf(cause))}`)
      : isConnectionRefused(cause)
        ? fail("Unreachable", `cannot connect (${(cause as { code?: string }).code})`)
        : fail("Transport", `request failed: ${quote(messageOf(cause))}`)

  /**
   * Sends a request and decodes the answer with `decode`. `acceptErrorAnswer` decides whether an
   * error status whose body still has the expected shape (a refused verify or settle) is an answer.
   */
  const call = <A>(
    [url, init]: [string, RequestInit],
    decode: (json: unknown) => Either.Either<A, unknown>,
    timeout: Duration.DurationInput,
    acceptErrorAnswer: (status: number) => boolean
  ) =>
    exchange(url, init).pipe(
      Effect.mapError(broken),
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => fail("TimedOut", `no answer within ${Duration.format(timeout)}`)
      }),
      Effect.flatMap(({ status, body }) => {
        const decoded = Either.flatMap(body.json, (json) => Either.mapLeft(decode(json), () => "unexpected shape"))
        const ok = status >= 200 && status < 300
        if (Either.isRight(decoded) && (ok || acceptErrorAnswer(status)))
          return Effect.succeed(redactor.value(decoded.right))
        return Effect.fail(
          ok
            ? fail("Malformed", `answered ${status} with an unexpected body: ${quote(body.text)}`, status)
            : fail("HttpStatus", `answered ${status}: ${quote(body.text)}`, status)
        )
      })
    )

  /** A 4xx whose body is a verify or settle result is the backend's answer (a refusal), not a failure. */
  const clientErrorIsAnswer = (status: number) => status >= 400 && status < 500

  return {
    id: backend.id,
    url: displayUrl(backend.url),
    supported: (timeout: Duration.DurationInput) => call(get("/supported"), decodeSupported, timeout, () => false),
    verify: (body: unknown, timeout: Duration.DurationInput) =>
      call(post("/verify", body), decodeVerify, timeout, clientErrorIsAnswer),
    settle: (body: unknown, timeout: Duration.DurationInput) =>
      call(post("/settle", body), decodeSettle, timeout, clientErrorIsAnswer)
  } satisfies BackendClient
}

/**
 * One facilitator backend as the pool sees it: an HTTP facilitator (`makeBackendClient`) or the
 * embedded Stellar one (`x402/embedded.ts`). The pool chooses, fails over, journals and
 * budgets through these three calls alone, so it does not care which kind it holds.
 */
export interface BackendClient {
  readonly id: string
  /** How status pages name it: an HTTP backend's URL without credentials, the embedded one's network and fee account. */
  readonly url: string
  readonly supported: (timeout: Duration.DurationInput) => Effect.Effect<RawSupported, BackendFailure>
  readonly verify: (
    body: unknown,
    timeout: Duration.DurationInput
  ) => Effect.Effect<typeof VerifyResponse.Type, BackendFailure>
  readonly settle: (
    body: unknown,
    timeout: Duration.DurationInput
  ) => Effect.Effect<typeof SettleResponse.Type, BackendFailure>
  /** Why it may not be chosen now although its last poll answered (the embedded fee account below its floor); null when it may. */
  readonly unhealthyReason?: () => string | null
  /** The embedded facilitator's money and channels, for status. */
  readonly embedded?: Effect.Effect<NonNullable<FacilitatorStatus["embedded"]>>
}

/** The URL as an operator configured it, minus any credentials embedded in it. */
export const displayUrl = (url: string) => {
  try {
    const parsed = new URL(url)
    parsed.username = ""
    parsed.password = ""
    return parsed.toString()
  } catch {
    return "(unparsable url)"
  }
}
