import { HttpApiBuilder, HttpApiError, HttpApiSchema, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { RouteNotFound } from "@effect/platform/HttpServerError"
import { Cause, Effect, Option } from "effect"
import { type ApiError, ApiErrors } from "../domain/errors.js"
import { describeIssues } from "../domain/issues.js"
import { SextantApi } from "./api/index.js"
import { jsonDepth, MAX_BODY_BYTES, MAX_JSON_DEPTH } from "./body.js"

const errorResponse = (status: number, error: string, message: string) =>
  HttpServerResponse.unsafeJson({ error, message }, { status })

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

const notRouted = (request: HttpServerRequest.HttpServerRequest) => {
  const path = new URL(request.url, "http://localhost").pathname
  const allowed = allowedMethods(path)
  // The method fits but the router could not take the path (an over-long or badly escaped id): no such thing.
  return allowed.length > 0 && !allowed.includes(request.method)
    ? errorResponse(405, "METHOD_NOT_ALLOWED", `${request.method} is not allowed on ${path}; use ${allowed.join(", ")}`).pipe(
        HttpServerResponse.setHeader("allow", allowed.join(", "))
      )
    : errorResponse(404, "NOT_FOUND", `no endpoint at ${request.method} ${path}`)
}

/**
 * Our error classes share one body shape, and HttpApi's own encoder picks the first structurally
 * matching class of the union (so a 404 could leave as a 401). They are answered here instead,
 * each with the status its class declares.
 */
const statusOf = new Map<unknown, number>(ApiErrors.map((cls) => [cls, HttpApiSchema.getStatusError(cls)]))

const apiErrorResponse = (error: ApiError) => {
  const response = HttpServerResponse.unsafeJson({ ...error }, { status: statusOf.get(error.constructor) ?? 500 })
  return "retryAfterSeconds" in error
    ? HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds))
    : response
}

const isApiError = (value: unknown): value is ApiError =>
  typeof value === "object" && value !== null && statusOf.has(value.constructor)

const hasTag = (value: unknown, tag: string) =>
  typeof value === "object" && value !== null && "_tag" in value && value._tag === tag

const isJson = (contentType: string) => /^application\/([a-z0-9.+-]*\+)?json\b/i.test(contentType.trim())

/**
 * Maps what HttpApi leaves as empty bodies or its own shapes onto `{error, message}`: malformed
 * JSON, schema failures (every issue, the field named), unknown routes, wrong methods, oversized
 * bodies. Anything unexpected is logged and answered 500 without internals.
 */
export const ErrorMiddlewareLive = HttpApiBuilder.middleware(
  SextantApi,
  (app) =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const length = Number(request.headers["content-length"] ?? 0)
      if (length > MAX_BODY_BYTES) {
        return errorResponse(413, "PAYLOAD_TOO_LARGE", `request bodies are limited to ${MAX_BODY_BYTES} bytes`)
      }
      // Bodies are JSON. A client that sends none is read as JSON; one that names another type is refused.
      const contentType = request.headers["content-type"]
      const hasBody = length > 0 || request.headers["transfer-encoding"] !== undefined
      if (hasBody && contentType !== undefined && !isJson(contentType)) {
        return errorResponse(415, "UNSUPPORTED_MEDIA_TYPE", `request bodies must be application/json, not ${contentType}`)
      }
      const jsonRequest =
        hasBody && contentType === undefined
          ? request.modify({ headers: { ...request.headers, "content-type": "application/json" } })
          : request
      if (hasBody) {
        // Read once here (the request caches it for the handler): a chunked body has no length to check up front.
        const text = yield* Effect.either(jsonRequest.text)
        if (text._tag === "Left" || Buffer.byteLength(text.right) > MAX_BODY_BYTES) {
          return text._tag === "Left" && length > 0
            ? errorResponse(400, "MALFORMED_BODY", "the request body could not be read")
            : errorResponse(413, "PAYLOAD_TOO_LARGE", `request bodies are limited to ${MAX_BODY_BYTES} bytes`)
        }
        if (jsonDepth(text.right) > MAX_JSON_DEPTH) {
          return errorResponse(400, "NESTING_TOO_DEEP", `request bodies may nest objects and arrays at most ${MAX_JSON_DEPTH} deep`)
        }
      }
      return yield* app.pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, jsonRequest),
        Effect.catchAllCause((cause) => {
          // A failure or a defect: HttpApi raises unknown routes and unreadable bodies either way.
          const problem: unknown = Cause.squash(cause)
          if (isApiError(problem)) return Effect.succeed(apiErrorResponse(problem))
          if (problem instanceof HttpApiError.HttpApiDecodeError) {
            return Effect.succeed(errorResponse(400, "INVALID_REQUEST", describeIssues(problem.issues)))
          }
          if (problem instanceof RouteNotFound) return Effect.succeed(notRouted(request))
          if (hasTag(problem, "RequestError")) {
            return Effect.succeed(errorResponse(400, "MALFORMED_BODY", "the request body is not valid JSON"))
          }
          if (Option.isSome(Cause.failureOption(cause))) return Effect.failCause(cause)
          if (hasTag(problem, "SqlError")) {
            return Effect.logError("store failure", cause).pipe(
              Effect.as(errorResponse(503, "STORE_UNAVAILABLE", "the store could not complete the request; retry later"))
            )
          }
          return Effect.logError("unhandled request failure", cause).pipe(
            Effect.as(errorResponse(500, "INTERNAL", "the request failed unexpectedly; it has been logged"))
          )
        })
      )
    })
)
