import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { PolicyEngine } from "../../policy/PolicyEngine.js"
import { Router } from "../../routing/Router.js"
import { SextantApi } from "../api/index.js"

/** `/v1/policies/evaluate` and `/v1/routes`: both judge through the same policy evaluation. */
export const PolicyHandlers = HttpApiBuilder.group(SextantApi, "policy", (handlers) =>
  Effect.gen(function* () {
    const engine = yield* PolicyEngine
    const router = yield* Router
    return handlers
      .handle("evaluate", ({ payload }) => engine.evaluate(payload))
      .handle("route", ({ payload }) => router.route(payload))
  })
)
