import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../../config.js"
import { StoreInfoTag } from "../../store/Database.js"
import { FacilitatorPool } from "../../x402/FacilitatorPool.js"
import { SextantApi } from "../api/index.js"

export const HealthHandlers = HttpApiBuilder.group(SextantApi, "health", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const store = yield* StoreInfoTag
    const pool = yield* FacilitatorPool
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => Effect.succeed({ status: "ok" as const, network: config.network, asset: config.asset }))
      .handle("dependencies", () =>
        Effect.map(pool.health, (facilitators) => ({
          // Degraded: writes could be lost, or backends exist and none can take a payment.
          status:
            store.durable && (facilitators.configured === 0 || facilitators.healthy > 0)
              ? ("ok" as const)
              : ("degraded" as const),
          store,
          facilitators
        }))
      )
  })
)
