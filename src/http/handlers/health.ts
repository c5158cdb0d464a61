import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig } from "../../config.js"
import { NotReady } from "../../domain/errors.js"
import { Lifecycle } from "../../lifecycle/Lifecycle.js"
import { StoreInfoTag } from "../../store/Database.js"
import { FacilitatorPool } from "../../x402/FacilitatorPool.js"
import { SextantApi } from "../../contract/index.js"

export const HealthHandlers = HttpApiBuilder.group(SextantApi, "health", (handlers) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const store = yield* StoreInfoTag
    const pool = yield* FacilitatorPool
    const lifecycle = yield* Lifecycle
    /**
     * Ready: the store is migrated (it is, once this handler exists: migrations run while the
     * store layer is built), every facilitator was polled once and one answered, and no shutdown
     * has begun. Otherwise 503 with the reason, so a load balancer sends traffic elsewhere.
     */
    const ready = Effect.gen(function* () {
      if (yield* lifecycle.draining) return yield* new NotReady({ message: "shutting down: finishing the requests in flight" })
      const facilitators = yield* pool.readiness
      if (!facilitators.ready) return yield* new NotReady({ message: facilitators.reason })
      return { status: "ok" as const, network: config.network, asset: config.asset }
    })
    return handlers
      .handle("live", () => Effect.succeed({ status: "ok" as const }))
      .handle("ready", () => ready)
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
