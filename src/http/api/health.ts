import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Unauthorized } from "../../domain/errors.js"
import { StellarNetwork } from "../../domain/stellar.js"
import { FacilitatorStatus, SupportedAsset } from "../../domain/x402.js"
import { ApiKeyAuth } from "../auth.js"

export const LiveResponse = Schema.Struct({ status: Schema.Literal("ok") })

export const ReadyResponse = Schema.Struct({
  status: Schema.Literal("ok"),
  network: StellarNetwork,
  asset: SupportedAsset
}).annotations({ identifier: "ReadyResponse" })

export const DependenciesResponse = Schema.Struct({
  status: Schema.Literal("ok", "degraded"),
  store: Schema.Struct({
    kind: Schema.Literal("sqlite", "postgres"),
    location: Schema.String,
    journalMode: Schema.NullOr(Schema.String),
    synchronous: Schema.NullOr(Schema.String),
    durable: Schema.Boolean
  }),
  facilitators: Schema.Struct({
    configured: Schema.Int,
    healthy: Schema.Int,
    backends: Schema.Array(FacilitatorStatus)
  })
}).annotations({ identifier: "DependenciesResponse" })
export type DependenciesResponse = typeof DependenciesResponse.Type

export class HealthApi extends HttpApiGroup.make("health")
  .add(HttpApiEndpoint.get("live", "/health/live").addSuccess(LiveResponse))
  .add(HttpApiEndpoint.get("ready", "/health/ready").addSuccess(ReadyResponse))
  .add(
    HttpApiEndpoint.get("dependencies", "/health/dependencies")
      .addSuccess(DependenciesResponse)
      .addError(Unauthorized)
      .middleware(ApiKeyAuth)
  ) {}
