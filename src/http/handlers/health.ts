import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Health } from "../../health/Health.js"

/** The health endpoints, answered by the Health service. */
export const HealthHandlers = HttpApiBuilder.group(SextantApi, "health", (handlers) =>
  Effect.map(Health, (health) =>
    handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => health.ready)
      .handle("dependencies", () => health.dependencies)
  )
).pipe(Layer.provide(Health.Live))
