import { HttpClient, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Duration, Effect, Either, Schema } from "effect"
import type { FacilitatorBackend } from "../config.js"
import { SettleResponse, VerifyResponse } from "../domain/x402.js"
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
  return code === "ECONNREFUSED" || code === "ConnectionRefused" || code === "ENOTFOUND" || code === "FailedToOpenSocket"
}

/** Reads the body once as text, so a non-JSON error page can still be quoted. */
const readBody = (response: HttpClientResponse.HttpClientResponse) =>
  response.text.pipe(
    Effect.map((text) => {
      try {
        return { text, json: Either.right(JSON.parse(text) as unknown) }
      } catch {
        return { text, json: Either.left("not JSON") }
      }
    })
  )

/**
 * One backend's HTTP API. The apiKey, when configured, goes to this backend as
 * `Authorization: Bearer` and nowhere else. Everything the backend says (error bodies quoted in a
 * failure, the messages inside its answers) passes through `redactor` here, at the boundary, so a
 * backend that echoes the request cannot put a key into an answer, the journal or a log.
 */
export const makeBackendClient = (http: HttpClient.HttpClient, backend: FacilitatorBackend, redactor: Redactor) => {
  const base = backend.url.replace(/\/+$/, "")
  const client = http.pipe(HttpClient.withTracerPropagation(false))
  // Redacted before it is cut to an excerpt: a cut could otherwise leave half a key no pattern matches.
  const quote = (text: string) => excerpt(redactor.text(text))
  const fail = (kind: BackendFailureKind, detail: string, status: number | null = null) =>
    new BackendFailure({ backendId: backend.id, kind, status, detail: redactor.text(detail) })

  const authorize = (request: HttpClientRequest.HttpClientRequest) =>
    backend.apiKey === undefined ? request : HttpClientRequest.bearerToken(request, backend.apiKey)

  /**
   * Sends `request` and decodes the answer with `schema`. `acceptErrorAnswer` decides whether an
   * error status whose body still has the expected shape (a refused verify or settle) is an answer.
   */
  const call = <A, I>(
    request: HttpClientRequest.HttpClientRequest,
    schema: Schema.Schema<A, I>,
    timeout: Duration.DurationInput,
    acceptErrorAnswer: (status: number) => boolean
  ) =>
    client.execute(authorize(request)).pipe(
      Effect.flatMap((response) =>
        readBody(response).pipe(Effect.map((body) => ({ status: response.status, body })))
      ),
      Effect.timeoutFail({
        duration: timeout,
        onTimeout: () => fail("TimedOut", `no answer within ${Duration.format(timeout)}`)
      }),
      Effect.catchTag("RequestError", (e) =>
        Effect.fail(
          isConnectionRefused(e.cause)
            ? fail("Unreachable", `cannot connect (${(e.cause as { code?: string }).code})`)
            : fail("Transport", `request failed: ${quote(e.cause instanceof Error ? e.cause.message : e.reason)}`)
        )
      ),
      Effect.catchTag("ResponseError", (e) => Effect.fail(fail("Transport", `reading the answer failed: ${e.reason}`))),
      Effect.flatMap(({ status, body }) => {
        const decoded = Either.flatMap(body.json, (json) =>
          Either.mapLeft(Schema.decodeUnknownEither(schema)(json), () => "unexpected shape")
        )
        const ok = status >= 200 && status < 300
        if (Either.isRight(decoded) && (ok || acceptErrorAnswer(status))) return Effect.succeed(redactor.value(decoded.right))
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
    supported: (timeout: Duration.DurationInput) =>
      call(HttpClientRequest.get(`${base}/supported`), RawSupported, timeout, () => false),
    verify: (body: unknown, timeout: Duration.DurationInput) =>
      call(HttpClientRequest.post(`${base}/verify`).pipe(HttpClientRequest.bodyUnsafeJson(body)), VerifyResponse, timeout, clientErrorIsAnswer),
    settle: (body: unknown, timeout: Duration.DurationInput) =>
      call(HttpClientRequest.post(`${base}/settle`).pipe(HttpClientRequest.bodyUnsafeJson(body)), SettleResponse, timeout, clientErrorIsAnswer)
  }
}
export type BackendClient = ReturnType<typeof makeBackendClient>
