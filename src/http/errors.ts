import {
  HttpApiBuilder,
  HttpApiError,
  HttpApiSchema,
  HttpApp,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { Cause, Effect, Option, Predicate, type Schema } from "effect"
import { SextantApi } from "../contract/index.js"
import { x402RefusalAnswer } from "../contract/x402.js"
import {
  type ApiErrorClass,
  HeadersTooLarge,
  InternalError,
  InvalidRequest,
  MalformedBody,
  MethodNotAllowed,
  NestingTooDeep,
  NotFound,
  PayloadTooLarge,
  StoreUnavailable,
  UnsupportedMediaType,
  wire
} from "../domain/errors.js"
import { describeIssues } from "../domain/issues.js"
import { hasProtoMember, headerBytes, jsonDepth, MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_JSON_DEPTH } from "./body.js"
import { refusalContextOf, x402OperationOf } from "./x402Refusal.js"

/** Every declared (method, path) pair, to tell "no such path" (404) from "wrong method" (405). */
const routes = Object.values(SextantApi.groups).flatMap((group) =>
  Object.values(group.endpoints).map((endpoint) => ({
    method: endpoint.method,
    pattern: new RegExp(`^${endpoint.path.replace(/:[^/]+/g, "[^/]+")}$`)
  }))
)
const extraPaths = [/^\/openapi\.json$/, /^\/docs$/]

export const allowedMethods = (path: string): ReadonlyArray<string> => [
  ...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method)),
  ...(extraPaths.some((p) => p.test(path)) ? ["GET"] : [])
]

/** Fails again with `cause`, and adds a header to the response HttpApi encodes from it. */
const refailWithHeader = <E>(cause: Cause.Cause<E>, name: string, value: string) =>
  Effect.zipRight(
    HttpApp.appendPreResponseHandler((_, response) =>
      Effect.succeed(HttpServerResponse.setHeader(response, name, value))
    ),
    Effect.failCause(cause)
  )

/**
 * A request no endpoint takes gets 404 (no such path) or 405 (the path exists, the method does
 * not). Neither is an endpoint's answer, so neither is in the API's error union: they are encoded
 * here, each from its own schema and status.
 */
const answer = <C extends ApiErrorClass>(
  errorClass: C,
  error: Schema.Schema.Type<C>,
  headers: Record<string, string> = {}
) =>
  HttpServerResponse.schemaJson(wire(errorClass))(error, {
    status: HttpApiSchema.getStatusError(errorClass),
    headers
  }).pipe(Effect.orDie)

const notRouted = (request: HttpServerRequest.HttpServerRequest) => {
  const path = new URL(request.url, "http://localhost").pathname
  const allowed = allowedMethods(path)
  // The method fits but the router could not take the path (an over-long or badly escaped id): no such thing.
  return allowed.length > 0 && !allowed.includes(request.method)
    ? answer(
        MethodNotAllowed,
        new MethodNotAllowed({ message: `${request.method} is not allowed on ${path}; use ${allowed.join(", ")}` }),
        { allow: allowed.join(", ") }
      )
    : answer(NotFound, new NotFound({ message: `no endpoint at ${request.method} ${path}` }))
}

const isJson = (contentType: string) => /^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType.trim())

/** What this middleware fails with; HttpApi encodes it (each is declared by the whole API). */
type RequestError =
  | HeadersTooLarge
  | InvalidRequest
  | MalformedBody
  | NestingTooDeep
  | PayloadTooLarge
  | UnsupportedMediaType
  | InternalError
  | StoreUnavailable

const tooLarge = new PayloadTooLarge({ message: `request bodies are limited to ${MAX_BODY_BYTES} bytes` })

/** An error that says when to come back carries it as `Retry-After` too. */
const retryAfterOf = (error: unknown): number | undefined =>
  typeof error === "object" &&
  error !== null &&
  "retryAfterSeconds" in error &&
  typeof error.retryAfterSeconds === "number"
    ? error.retryAfterSeconds
    : undefined

/**
 * Turns what HttpApi leaves as empty bodies or its own shapes into this API's error classes, which
 * HttpApi then encodes with their declared statuses: malformed JSON, schema failures (every issue,
 * the field named), unknown routes, wrong methods, oversized and non-JSON bodies. A store failure
 * is 503 and anything unexpected 500 without internals; both are logged.
 */
export const ErrorMiddlewareLive = HttpApiBuilder.middleware(SextantApi, (app) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const read: { body?: string } = {}
    return yield* checked(app, request, read).pipe(Effect.catchAll((error) => inX402Shape(request, read.body, error)))
  })
)

/**
 * On verify and settle every refusal, the handler's and any other (auth, the body checks, the
 * store, a shutdown), is answered in their combined body (domain/x402Refusals.ts), so a stock
 * facilitator client reads each one. `body` is the request body as read, when it was.
 */
const inX402Shape = <E>(request: HttpServerRequest.HttpServerRequest, body: string | undefined, error: E) => {
  const operation = x402OperationOf(request.method, new URL(request.url, "http://localhost").pathname)
  if (operation === undefined) return Effect.fail(error)
  let parsed: unknown
  try {
    parsed = body === undefined ? undefined : JSON.parse(body)
  } catch {
    parsed = undefined
  }
  const answer = x402RefusalAnswer(operation, error, refusalContextOf(parsed))
  return answer === undefined
    ? Effect.fail(error)
    : HttpServerResponse.json(answer.body, { status: answer.status }).pipe(Effect.orDie)
}

/** The checks before routing, then the app with what HttpApi leaves in its own shapes mapped; `read.body` keeps the body once read. */
const checked = (app: HttpApp.Default, request: HttpServerRequest.HttpServerRequest, read: { body?: string }) =>
  Effect.gen(function* () {
    if (headerBytes(request.method, request.url, request.headers) > MAX_HEADER_BYTES) {
      return yield* new HeadersTooLarge({
        message: `the request line and headers together are limited to ${MAX_HEADER_BYTES} bytes`
      })
    }
    const length = Number(request.headers["content-length"] ?? 0)
    if (length > MAX_BODY_BYTES) return yield* Effect.fail(tooLarge)
    // Bodies are JSON and say so: a body without a Content-Type is what a web page can send
    // cross-site without a preflight (a Blob, a form), so it is refused like any other type.
    const contentType = request.headers["content-type"]
    const hasBody = length > 0 || request.headers["transfer-encoding"] !== undefined
    if (hasBody && (contentType === undefined || !isJson(contentType))) {
      return yield* Effect.fail(
        new UnsupportedMediaType({
          message: `request bodies must be sent with Content-Type: application/json, not ${contentType === undefined ? "without one" : contentType}`
        })
      )
    }
    if (hasBody) {
      // Read once here (the request caches it for the handler): a chunked body has no length to check up front.
      const text = yield* Effect.either(request.text)
      if (text._tag === "Left" && length > 0)
        return yield* new MalformedBody({ message: "the request body could not be read" })
      if (text._tag === "Left" || Buffer.byteLength(text.right) > MAX_BODY_BYTES) return yield* Effect.fail(tooLarge)
      read.body = text.right
      if (jsonDepth(text.right) > MAX_JSON_DEPTH) {
        return yield* Effect.fail(
          new NestingTooDeep({ message: `request bodies may nest objects and arrays at most ${MAX_JSON_DEPTH} deep` })
        )
      }
      if (hasProtoMember(text.right)) {
        return yield* new InvalidRequest({ message: "request bodies may not hold a member named __proto__" })
      }
    }
    return yield* app.pipe(
      Effect.catchAllCause((cause): Effect.Effect<HttpServerResponse.HttpServerResponse, RequestError> => {
        // A failure or a defect: HttpApi raises unknown routes and unreadable bodies either way.
        const problem: unknown = Cause.squash(cause)
        if (problem instanceof HttpApiError.HttpApiDecodeError) {
          return new InvalidRequest({ message: describeIssues(problem.issues) })
        }
        if (problem instanceof RouteNotFound) return notRouted(request)
        if (Predicate.isTagged(problem, "RequestError"))
          return new MalformedBody({ message: "the request body is not valid JSON" })
        // Any other failure is an endpoint's declared error: HttpApi encodes it with its status.
        if (Option.isSome(Cause.failureOption(cause))) {
          const retryAfter = retryAfterOf(problem)
          return retryAfter === undefined
            ? Effect.failCause(cause)
            : refailWithHeader(cause, "retry-after", String(retryAfter))
        }
        if (Predicate.isTagged(problem, "SqlError")) {
          return Effect.logError("store failure", cause).pipe(
            Effect.zipRight(new StoreUnavailable({ message: "the store could not complete the request; retry later" }))
          )
        }
        return Effect.logError("unhandled request failure", cause).pipe(
          Effect.zipRight(new InternalError({ message: "the request failed unexpectedly; it has been logged" }))
        )
      })
    )
  })
