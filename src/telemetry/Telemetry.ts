import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient, HttpMiddleware, type HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Logger } from "effect"
import type { Config } from "../config.js"
import { RedactingLogger } from "../redaction/RedactingLogger.js"
import { redactorFor } from "../redaction/redact.js"

/**
 * Spans go to `<otlpEndpoint>/v1/traces` as OTLP/HTTP JSON through @effect/opentelemetry's
 * OtlpTracer: it exports Effect's own spans over the platform HttpClient, so no OpenTelemetry SDK
 * runs in the process and the single binary carries nothing extra. Its export requests run with the
 * tracer disabled, so exporting makes no spans of its own. Span attributes are the platform's:
 * `authorization`, cookies and `x-api-key` are redacted, and the service's own spans carry names,
 * not arguments, so no key, payment or address reaches the collector through an attribute.
 *
 * Without an endpoint the tracer is off: every span would be made and dropped, nothing in the
 * process reads them, and making them was about a fifth of a route's CPU (bench:route). The HTTP
 * server's span middleware is skipped too: with the tracer off it still parsed the URL, the
 * client address and the headers of every request for a span that goes nowhere.
 */
const tracing = (config: Config, serviceVersion: string) =>
  config.telemetry.otlpEndpoint === null
    ? Layer.merge(
        Layer.setTracerEnabled(false),
        Layer.scopedDiscard(Effect.locallyScoped(HttpMiddleware.currentTracerDisabledWhen, () => true))
      )
    : OtlpTracer.layer({
        url: `${config.telemetry.otlpEndpoint.replace(/\/+$/, "")}/v1/traces`,
        resource: { serviceName: config.telemetry.serviceName, serviceVersion },
        exportInterval: "1 second"
      }).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer))

/**
 * The process's one logger: `logFormat: "json"` writes one JSON object per line (Effect's
 * structured logger), "text" the pretty one; either way behind the redactor, so no secret a
 * backend echoed reaches a log line.
 */
export const processLogger = (config: Config) =>
  RedactingLogger(
    redactorFor(config),
    config.logFormat === "json" ? Logger.withConsoleLog(Logger.jsonLogger) : Logger.prettyLoggerDefault
  )

/**
 * The process's tracer and logger, provided under every other layer of `serve` so the HTTP
 * server's request spans and the services' spans share it.
 */
export const TelemetryLive = (config: Config, serviceVersion: string) =>
  Layer.merge(tracing(config, serviceVersion), processLogger(config))

/**
 * Server spans are named `http.server <METHOD> <route template>` instead of only the method, so a
 * trace view groups requests by endpoint; the template never carries an id from the path.
 */
export const spanNames = (routeOfUrl: (url: string) => string) =>
  HttpMiddleware.withSpanNameGenerator(
    (request: HttpServerRequest.HttpServerRequest) => `http.server ${request.method} ${routeOfUrl(request.url)}`
  )
