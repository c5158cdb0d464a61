import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Layer } from "effect"
import type { Config } from "../config.js"
import { SextantApi } from "./api/index.js"
import { ApiKeyAuthLive } from "./authLive.js"
import { ErrorMiddlewareLive, MAX_BODY_BYTES } from "./errors.js"
import { HealthHandlers } from "./handlers/health.js"
import { PolicyHandlers } from "./handlers/policy.js"
import { ReceiptsHandlers } from "./handlers/receipts.js"
import { ResourcesHandlers } from "./handlers/resources.js"
import { VerificationHandlers } from "./handlers/verification.js"
import { X402Handlers } from "./handlers/x402.js"

export const ApiLive = HttpApiBuilder.api(SextantApi).pipe(
  Layer.provide([
    HealthHandlers,
    ResourcesHandlers,
    VerificationHandlers,
    PolicyHandlers,
    X402Handlers,
    ReceiptsHandlers
  ]),
  Layer.provide(ApiKeyAuthLive)
)

/**
 * The HTTP surface: the API, `/openapi.json` derived from it, and `/docs` (Scalar, whose script is
 * bundled inside @effect/platform, so the page renders with no network).
 */
export const HttpLive = HttpApiBuilder.serve().pipe(
  Layer.provide(HttpApiScalar.layer({ path: "/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/openapi.json" })),
  Layer.provide(ErrorMiddlewareLive),
  Layer.provide(ApiLive),
  HttpServer.withLogAddress
)

/** Bun's own cap sits just above ours so an oversized chunked body is cut off before it is buffered whole. */
export const BunServerLive = (config: Pick<Config, "host" | "port">) =>
  BunHttpServer.layer({ hostname: config.host, port: config.port, maxRequestBodySize: MAX_BODY_BYTES + 1024 })
