import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../../config.js"
import { StoreInfoTag } from "../../store/Database.js"
import { SextantApi } from "../api/index.js"

export const HealthHandlers = HttpApiBuilder.group(SextantApi, "health", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const store = yield* StoreInfoTag
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => Effect.succeed({ status: "ok" as const, network: config.network, asset: config.asset }))
      .handle("dependencies", () =>
        Effect.succeed({
          status: store.durable ? ("ok" as const) : ("degraded" as const),
          store,
          facilitators: { configured: config.facilitators.length, healthy: 0, backends: [] }
        })
      )
  })
)
