import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Verification } from "../../verification/Verification.js"

/** The verification endpoints, answered by the Verification service. */
export const VerificationHandlers = HttpApiBuilder.group(SextantApi, "verification", (handlers) =>
  Effect.map(Verification, (verification) =>
    handlers
      .handle("validate", ({ payload }) => verification.validate(payload))
      .handle("metrics", ({ path }) => verification.metrics(path.id))
      .handle("observations", ({ path, urlParams }) => verification.observations(path.id, urlParams))
      .handle("history", ({ path, urlParams }) => verification.history(path.id, urlParams))
  )
)
