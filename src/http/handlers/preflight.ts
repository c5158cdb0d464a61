import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Preflight } from "../../preflight/Preflight.js"

/** `/v1/preflight`. */
export const PreflightHandlers = HttpApiBuilder.group(SextantApi, "preflight", (handlers) =>
  Effect.map(Preflight, (preflight) => handlers.handle("preflight", ({ payload }) => preflight.judge(payload)))
)
