import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { DependenciesResponse, ReadyResponse } from "../contract/health.js"
import { NotReady } from "../domain/errors.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import { StoreInfoTag } from "../store/Database.js"
import { FacilitatorPool } from "../x402/FacilitatorPool.js"

export interface HealthShape {
  /**
   * Ready: the store is migrated (it is, once this service exists: migrations run while the store
   * layer is built), every facilitator was polled once and one answered, and no shutdown has
   * begun. Otherwise `NotReady` (503) with the reason, so a load balancer sends traffic elsewhere.
   */
  readonly ready: Effect.Effect<typeof ReadyResponse.Type, NotReady>
  /** The store and every facilitator backend; degraded when writes could be lost, or backends exist and none can take a payment. */
  readonly dependencies: Effect.Effect<DependenciesResponse>
}

/** What `/health/ready` and `/health/dependencies` answer. */
export class Health extends Context.Tag("sextant/Health")<Health, HealthShape>() {
  static readonly Live = Layer.effect(
    Health,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const store = yield* StoreInfoTag
  const pool = yield* FacilitatorPool
  const lifecycle = yield* Lifecycle

  const ready = Effect.gen(function* () {
    if (yield* lifecycle.draining)
      return yield* new NotReady({ message: "shutting down: finishing the requests in flight" })
    const facilitators = yield* pool.readiness
    if (!facilitators.ready) return yield* new NotReady({ message: facilitators.reason })
    return { status: "ok" as const, network: config.network, asset: config.asset }
  })

  const dependencies = Effect.map(pool.health, (facilitators) => ({
    status:
      store.durable && (facilitators.configured === 0 || facilitators.healthy > 0)
        ? ("ok" as const)
        : ("degraded" as const),
    store,
    facilitators
  }))

  return Health.of({ ready, dependencies })
})
