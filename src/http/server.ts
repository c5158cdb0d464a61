import http from "node:http"
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Effect, Layer } from "effect"
import type { AppConfig, Config } from "../config.js"
import type { ApiKeyAuth } from "../contract/auth.js"
import { SextantApi } from "../contract/index.js"
import { McpRouteLive } from "../mcp/httpTransport.js"
import { spanNames } from "../telemetry/Telemetry.js"
import { AdmissionMiddlewareLive } from "./admission.js"
import { ApiKeyAuthLive, LocalOperatorAuth } from "./authLive.js"
import { MAX_BODY_BYTES, PARSER_HEADER_BYTES } from "./body.js"
import { ErrorMiddlewareLive } from "./errors.js"
import { CurationHandlers } from "./handlers/curation.js"
import { DiscoveryHandlers } from "./handlers/discovery.js"
import { HealthHandlers } from "./handlers/health.js"
import { PolicyHandlers } from "./handlers/policy.js"
import { PreflightHandlers } from "./handlers/preflight.js"
import { ReceiptsHandlers } from "./handlers/receipts.js"
import { RegistrationHandlers } from "./handlers/registration.js"
import { ResourcesHandlers } from "./handlers/resources.js"
import { VerificationHandlers } from "./handlers/verification.js"
import { X402Handlers } from "./handlers/x402.js"
import { httpMetrics, MetricsRouteLive, spanPath } from "./metrics.js"
import { StatusRoutesLive } from "./status.js"

const handlers = (auth: Layer.Layer<ApiKeyAuth, never, AppConfig>) =>
  HttpApiBuilder.api(SextantApi).pipe(
    Layer.provide([
      HealthHandlers,
      ResourcesHandlers,
      RegistrationHandlers,
      CurationHandlers,
      VerificationHandlers,
      PolicyHandlers,
      PreflightHandlers,
      X402Handlers,
      DiscoveryHandlers,
      ReceiptsHandlers
    ]),
    Layer.provide(auth)
  )

export const ApiLive = handlers(ApiKeyAuthLive)

/**
 * The API for a trusted local caller (`sextant mcp`, run by the operator on the same store):
 * the same handlers and error mapping, with key checks replaced by the local operator principal.
 * Requests go straight to the handlers, with no socket.
 */
const localApi = Layer.mergeAll(handlers(LocalOperatorAuth), ErrorMiddlewareLive, BunHttpServer.layerContext)

export const localApiHandler = <E>(services: Layer.Layer<Layer.Layer.Context<typeof localApi>, E>) =>
  HttpApiBuilder.toWebHandler(localApi.pipe(Layer.provide(services)))

/**
 * The HTTP surface: the API, `/openapi.json` derived from it, `/docs` (Scalar, whose script is
 * bundled inside @effect/platform, so the page renders with no network), the status pages and
 * `/metrics`. Every request is counted and timed by route template, and its server span is named
 * by it.
 */
export const HttpLive = HttpApiBuilder.serve(httpMetrics).pipe(
  Layer.provide(StatusRoutesLive),
  Layer.provide(MetricsRouteLive),
  Layer.provide(McpRouteLive.pipe(Layer.provide(ApiKeyAuthLive))),
  Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(ErrorMiddlewareLive),
  Layer.provide(AdmissionMiddlewareLive),
  Layer.provide(ApiLive),
  spanNames(spanPath),
  HttpServer.withLogAddress
)

/**
 * Bun's HTTP parser answers headers over its cap (16 KiB unless told) with an empty 431 before the
 * app sees them. Raised here, before the server is made, rather than by `--max-http-header-size`,
 * so the service's own JSON 431 answers up to PARSER_HEADER_BYTES however it was started
 * (`bun src/main.ts serve`, `npm start`, the binary, a test). Bun reads the process-wide value
 * (node:http's `maxHeaderSize`, settable in Bun) when a server starts.
 */
const ParserHeaderCap = Layer.effectDiscard(
  Effect.sync(() => {
    ;(http as { maxHeaderSize: number }).maxHeaderSize = PARSER_HEADER_BYTES
  })
)

/**
 * Bun answers a body over its own cap with an empty 413 before the app sees it, so that cap sits
 * well above ours: a declared length over 1 MiB is refused by the error middleware without being
 * read, and a chunked body is buffered at most to Bun's cap before it is counted and refused.
 */
export const BunServerLive = (config: Pick<Config, "host" | "port">) =>
  BunHttpServer.layer({ hostname: config.host, port: config.port, maxRequestBodySize: 16 * MAX_BODY_BYTES }).pipe(
    Layer.provide(ParserHeaderCap)
  )
