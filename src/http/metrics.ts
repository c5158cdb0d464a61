import {
  HttpApi,
  HttpApiBuilder,
  HttpMiddleware,
  HttpServerError,
  HttpServerRequest,
  HttpServerResponse
} from "@effect/platform"
import { Effect, Exit } from "effect"
import { SextantApi } from "../contract/index.js"
import { MCP_PATH } from "../mcp/httpTransport.js"
import { Instruments } from "../telemetry/Instruments.js"
import { measured, methodLabel, routeMatcher } from "../telemetry/labels.js"
import { Exposition } from "./Exposition.js"
import { STATUS_ROUTES } from "./status.js"

/** Every path template the server answers: the API's endpoints and the raw routes beside them. */
const templates = () => {
  const paths: Array<string> = []
  HttpApi.reflect(SextantApi, { onGroup: () => {}, onEndpoint: ({ endpoint }) => void paths.push(endpoint.path) })
  return [...paths, ...STATUS_ROUTES, "/metrics", MCP_PATH, "/openapi.json", "/docs"]
}

/** A request path to its route template (`/v1/resources/:id`): the HTTP metrics' and span names' label. */
export const routeOf = routeMatcher(templates())

const pathOf = (url: string) => new URL(url, "http://request.invalid").pathname

/** `GET /metrics`: Prometheus text exposition. Public like `/health`: it carries no id, address or secret. */
export const MetricsRouteLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const exposition = yield* Exposition
    yield* router.get(
      "/metrics",
      Effect.map(exposition.text, (text) => HttpServerResponse.text(text, { contentType: exposition.contentType }))
    )
  })
)

/** Counts and times every request by method, route template and status, errors included. */
export const httpMetrics = HttpMiddleware.make((app) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const instruments = yield* Instruments
    const method = methodLabel(request.method)
    const route = routeOf(pathOf(request.url))
    return yield* measured(app, (exit, seconds) =>
      instruments.httpRequest(
        method,
        route,
        Exit.isSuccess(exit) ? exit.value.status : HttpServerError.exitResponse(exit).status,
        seconds
      )
    )
  })
)

/** Span names by route template too (`http.server GET /v1/resources/:id`). */
export const spanPath = (url: string) => routeOf(pathOf(url))
