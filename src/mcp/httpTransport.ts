import {
  type HttpApi,
  HttpApiBuilder,
  type HttpRouter,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Effect, Layer, Option, Redacted, Runtime } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { AppConfig } from "../config.js"
import { ApiKeyAuth } from "../contract/auth.js"
import { MethodNotAllowed, wire } from "../domain/errors.js"
import { clientAddress } from "../limits/groups.js"
import { serveMcpHttp } from "./serveHttp.js"
import { mcpServerFactory } from "./server.js"

/** Where the service answers MCP over Streamable HTTP, beside the JSON API on the same port. */
export const MCP_PATH = "/mcp"

const BEARER = /^Bearer\s+(\S+)\s*$/i

/**
 * `/mcp`: Sextant's MCP server over Streamable HTTP, the tools of `sextant mcp` answered by the
 * API this process serves, in-process. Stateless in both generations (a server per request, JSON
 * answers, no session id): every tool call is one API request, so there is no state a session
 * would carry, and any instance behind a balancer can answer any request.
 *
 * With API keys configured the request needs `Authorization: Bearer` with a configured key (401
 * otherwise), and each tool's API request carries the caller's header and address, so keyed
 * endpoints, roles and rate limits judge the MCP caller as they judge a direct one (behind a proxy,
 * the caller's address is read from `limits.clientAddressHeader`, as for any request). No
 * `buy_resource` here: a remote caller must never spend the operator's buyer key. The key check
 * (`ApiKeyAuth`) is given by the HTTP server that mounts the route, so this folder never imports
 * the server's code back.
 */
export const McpRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const auth = yield* ApiKeyAuth
    const config = yield* AppConfig
    const { apiKeys } = config
    const runtime = yield* Effect.runtime<
      HttpApi.Api | HttpApiBuilder.Router | HttpApiBuilder.Middleware | HttpRouter.HttpRouter.DefaultServices
    >()
    // The whole API app, built at the first call, when every route has been added to the router.
    const api = yield* Effect.cached(HttpApiBuilder.httpApp)

    /** A tool's API request, as from the MCP caller: its key, its address, and the Host it addressed (already judged). */
    const inProcess =
      (authorization: string | undefined, remoteAddress: string | undefined, host: string | undefined) =>
      (request: Request) =>
        Runtime.runPromise(runtime)(
          Effect.gen(function* () {
            const app = yield* api
            const headers = new Headers(request.headers)
            if (authorization !== undefined) headers.set("authorization", authorization)
            if (host !== undefined) headers.set("host", host)
            // The caller's address is settled below (remoteAddress); a header here must not move it again.
            if (config.limits.clientAddressHeader !== null) headers.delete(config.limits.clientAddressHeader)
            const serverRequest = HttpServerRequest.fromWeb(new Request(request, { headers }))
            const response = yield* app.pipe(
              Effect.provideService(
                HttpServerRequest.HttpServerRequest,
                remoteAddress === undefined ? serverRequest : serverRequest.modify({ remoteAddress })
              ),
              Effect.scoped,
              Effect.catchAllCause((cause) => Effect.map(HttpServerError.causeResponse(cause), ([answer]) => answer))
            )
            return HttpServerResponse.toWeb(response, { runtime })
          })
        )

    const bracketed = (name: string) => (name.includes(":") && !name.startsWith("[") ? `[${name}]` : name)
    // The names this service answers to (`foreignRequestRefusal`); the SDK's checks ignore the port.
    const hostnames = [
      ...new Set(["localhost", "127.0.0.1", "[::1]", ...[config.host, ...config.allowedHosts].map(bracketed)])
    ]

    const answer = Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      // Stateless: no stream to open with GET, no session to end with DELETE. MCP's Streamable HTTP
      // lets a server without the GET stream answer 405; every other method is refused alike.
      if (request.method !== "POST") {
        return yield* HttpServerResponse.schemaJson(wire(MethodNotAllowed))(
          new MethodNotAllowed({
            message: `${request.method} is not allowed on ${MCP_PATH}: this stateless endpoint takes JSON-RPC over POST only`
          }),
          { status: 405, headers: { allow: "POST" } }
        ).pipe(Effect.orDie)
      }
      const authorization = request.headers.authorization
      if (apiKeys.length > 0) yield* auth.bearer(Redacted.make(BEARER.exec(authorization ?? "")?.[1] ?? ""))
      // The error middleware has read and checked the body already (size, JSON depth); it is cached.
      const body = request.method === "POST" ? yield* Effect.orElseSucceed(request.json, () => undefined) : undefined
      const caller = clientAddress(config.limits, request.headers, Option.getOrUndefined(request.remoteAddress))
      const factory = mcpServerFactory(inProcess(authorization, caller, request.headers.host), pkg.version)
      const web = new Request(new URL(request.url, "http://sextant.local"), {
        method: request.method,
        headers: new Headers(request.headers)
      })
      // The MCP specification asks servers to validate Origin. The admission middleware refuses
      // foreign names first (open mode); the SDK's own check holds the same names here too.
      const answered = yield* Effect.promise(() =>
        serveMcpHttp(factory, web, body, apiKeys.length === 0 ? { hostnames } : undefined)
      )
      return HttpServerResponse.fromWeb(answered)
    })
    yield* router.all(MCP_PATH, answer)
  })
).pipe(Layer.provide([HttpApiBuilder.Middleware.layer, HttpApiBuilder.Router.Live]))
