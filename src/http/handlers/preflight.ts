import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Outcomes } from "../../preflight/Outcomes.js"
import { Preflight } from "../../preflight/Preflight.js"

/** `/v1/preflight` and `/v1/preflight/outcomes`. */
export const PreflightHandlers = HttpApiBuilder.group(SextantApi, "preflight", (handlers) =>
  Effect.map(Effect.all([Preflight, Outcomes]), ([preflight, outcomes]) =>
    handlers
      .handle("preflight", ({ payload }) => preflight.judge(payload))
      .handle("outcome", ({ payload }) => outcomes.report(payload))
  )
)
