import { FetchHttpClient, HttpMiddleware, HttpServerRequest } from "@effect/platform"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { Layer, Logger } from "effect"
import type { Config } from "../config.js"

/**
 * Spans go to `<otlpEndpoint>/v1/traces` as OTLP/HTTP JSON through @effect/opentelemetry's
 * OtlpTracer: it exports Effect's own spans over the platform HttpClient, so no OpenTelemetry SDK
 * runs in the process and the single binary carries nothing extra. Its export requests run with the
 * tracer disabled, so exporting makes no spans of its own. Span attributes are the platform's:
 * `authorization`, cookies and `x-api-key` are redacted, and the service's own spans carry names,
 * not arguments, so no key, payment or address reaches the collector through an attribute.
 */
const tracing = (config: Config, serviceVersion: string) =>
  config.telemetry.otlpEndpoint === null
    ? Layer.empty
    : OtlpTracer.layer({
        url: `${config.telemetry.otlpEndpoint.replace(/\/+$/, "")}/v1/traces`,
        resource: { serviceName: config.telemetry.serviceName, serviceVersion },
        exportInterval: "1 second"
      }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))

/** `logFormat: "json"`: one JSON object per line (Effect's structured logger); "text" keeps the default logger. */
const logging = (config: Config) =>
  config.logFormat === "json" ? Logger.json : Layer.empty

/**
 * The process's tracer and logger, provided under every other layer of `serve` so the HTTP
 * server's request spans and the services' spans share it.
 */
export const TelemetryLive = (config: Config, serviceVersion: string) => Layer.merge(tracing(config, serviceVersion), logging(config))

/**
 * Server spans are named `http.server <METHOD> <route template>` instead of only the method, so a
 * trace view groups requests by endpoint; the template never carries an id from the path.
 */
export const spanNames = (routeOfUrl: (url: string) => string) =>
  HttpMiddleware.withSpanNameGenerator(
    (request: HttpServerRequest.HttpServerRequest) => `http.server ${request.method} ${routeOfUrl(request.url)}`
  )
