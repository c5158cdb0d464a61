import { HttpApiBuilder, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { AppConfig } from "../config.js"
import { SextantApi } from "../contract/index.js"
import { ForeignOrigin, ShuttingDown } from "../domain/errors.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import { clientAddress, limitedGroupOf, limitKey } from "../limits/groups.js"
import { RateLimits } from "../limits/RateLimits.js"
import { keyLookup } from "./authLive.js"
import { foreignRequestRefusal } from "./openMode.js"

/** How soon a client turned away by a shutdown should try again (another instance, normally). */
const SHUTDOWN_RETRY_SECONDS = 5

const BEARER = /^Bearer\s+(\S+)\s*$/i

/** Answers with a header added to whatever HttpApi encodes from the failure. */
const withHeaders = (headers: Record<string, string>) =>
  HttpApp.appendPreResponseHandler((_, response) => Effect.succeed(HttpServerResponse.setHeaders(response, headers)))

/**
 * Whether a request is taken at all, before its body is read or its route runs:
 * - while the process drains for a shutdown, only `/health/*` is answered; anything else is 503
 *   SHUTTING_DOWN (with `Connection: close`, so the client's next request opens a connection to
 *   another instance). What was taken before is counted as in flight until it is answered.
 * - without API keys, a request addressed to a name that is not this service's, or sent from a
 *   foreign web page (`Origin`), is 403 FOREIGN_ORIGIN (`foreignRequestRefusal`), `/mcp` included;
 *   liveness and readiness stay open to probes that address the pod by its IP.
 * - the rate-limited endpoints (`limits`) count the request against its principal: the API key's
 *   principal, else the client address. Over the limit: 429 RATE_LIMITED with `Retry-After`.
 */
export const AdmissionMiddlewareLive = HttpApiBuilder.middleware(
  SextantApi,
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const limits = yield* RateLimits
    const config = yield* AppConfig
    const lookup = keyLookup(config.apiKeys)

    const principalOf = (authorization: string | undefined) => {
      const token = authorization === undefined ? undefined : BEARER.exec(authorization)?.[1]
      return token === undefined ? null : (lookup(token)?.id ?? null)
    }

    return (app: HttpApp.Default) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const path = new URL(request.url, "http://localhost").pathname
        if ((yield* lifecycle.draining) && !path.startsWith("/health/")) {
          yield* withHeaders({ "retry-after": String(SHUTDOWN_RETRY_SECONDS), connection: "close" })
          return yield* Effect.fail(
            new ShuttingDown({
              message: "this instance is shutting down; send the request again (to another instance)",
              retryAfterSeconds: SHUTDOWN_RETRY_SECONDS
            })
          )
        }
        if (path !== "/health/live" && path !== "/health/ready") {
          const foreign = foreignRequestRefusal(config, request.headers)
          if (foreign !== undefined) return yield* new ForeignOrigin({ message: foreign })
        }
        const group = limitedGroupOf(request.method, request.url)
        if (group !== undefined) {
          const address = clientAddress(config.limits, request.headers, Option.getOrUndefined(request.remoteAddress))
          yield* limits
            .admit(group, limitKey(group, principalOf(request.headers.authorization), address))
            .pipe(Effect.tapError((e) => withHeaders({ "retry-after": String(e.retryAfterSeconds) })))
        }
        return yield* lifecycle.track(app)
      }) as Effect.Effect<
        HttpServerResponse.HttpServerResponse,
        ShuttingDown | ForeignOrigin,
        HttpServerRequest.HttpServerRequest
      >
    // RateLimited is not an error of the whole API (GET /v1/resources is never limited) but of each
    // limited endpoint (`failsWith(RateLimited)`); HttpApi encodes a middleware's failure with the
    // union of every declared error, so it is answered 429 all the same.
  })
)
