import { Schema } from "effect"
import { HttpUrl, opt } from "./fields.js"

/**
 * Traces: with `otlpEndpoint` set (a collector's OTLP/HTTP base URL, e.g. http://127.0.0.1:4318),
 * every HTTP request and service step is exported as a span to `<otlpEndpoint>/v1/traces`.
 * Off (null) by default: nothing leaves the process unless the operator names a collector.
 */
export const TelemetryConfig = Schema.Struct({
  otlpEndpoint: opt(Schema.NullOr(HttpUrl), null).annotations({
    description:
      "An OpenTelemetry collector's OTLP/HTTP base URL: spans of every HTTP request and service step go to `<otlpEndpoint>/v1/traces` (OTLP JSON, every second); `null` makes no span at all. Not quoted in config errors (it may carry a token).",
    examples: ["http://127.0.0.1:4318"]
  }),
  serviceName: opt(Schema.String.pipe(Schema.minLength(1)), "sextant").annotations({
    description: "The exported resource's `service.name`, to tell instances apart in a shared collector."
  })
})
export type TelemetryConfig = typeof TelemetryConfig.Type
