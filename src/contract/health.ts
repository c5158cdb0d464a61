import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { NotReady } from "../domain/errors.js"
import { StellarNetwork } from "../domain/stellar.js"
import { StoreInfo } from "../domain/store.js"
import { FacilitatorStatus, SupportedAsset } from "../domain/x402.js"
import { ApiKeyAuth } from "./auth.js"
import { failsWith } from "./parse.js"

export const LiveResponse = Schema.Struct({ status: Schema.Literal("ok") })

export const ReadyResponse = Schema.Struct({
  status: Schema.Literal("ok"),
  network: StellarNetwork,
  asset: SupportedAsset
}).annotations({ identifier: "ReadyResponse" })

export const DependenciesResponse = Schema.Struct({
  status: Schema.Literal("ok", "degraded"),
  store: StoreInfo,
  facilitators: Schema.Struct({
    configured: Schema.Int,
    healthy: Schema.Int,
    backends: Schema.Array(FacilitatorStatus)
  })
}).annotations({ identifier: "DependenciesResponse" })
export type DependenciesResponse = typeof DependenciesResponse.Type

export class HealthApi extends HttpApiGroup.make("health")
  .add(HttpApiEndpoint.get("live", "/health/live").addSuccess(LiveResponse))
  .add(HttpApiEndpoint.get("ready", "/health/ready").addSuccess(ReadyResponse).pipe(failsWith(NotReady)))
  .add(
    HttpApiEndpoint.get("dependencies", "/health/dependencies").addSuccess(DependenciesResponse).middleware(ApiKeyAuth)
  ) {}
