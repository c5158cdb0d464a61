import { HttpApi, OpenApi } from "@effect/platform"
import { HealthApi } from "./health.js"
import { PolicyApi } from "./policy.js"
import { ReceiptsApi } from "./receipts.js"
import { ResourcesApi } from "./resources.js"
import { VerificationApi } from "./verification.js"
import { X402Api } from "./x402.js"

/** The whole contract; `/openapi.json` is derived from this, never written by hand. */
export class SextantApi extends HttpApi.make("sextant")
  .add(HealthApi)
  .add(ResourcesApi)
  .add(VerificationApi)
  .add(PolicyApi)
  .add(X402Api)
  .add(ReceiptsApi)
  .annotate(OpenApi.Title, "Sextant")
  .annotate(OpenApi.Version, "0.1.0")
  .annotate(OpenApi.License, { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" })
  .annotate(
    OpenApi.Description,
    "Verification, routing, policy and settlement layer for x402 payments on Stellar."
  ) {}
