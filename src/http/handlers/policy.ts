import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { PolicyEngine } from "../../policy/PolicyEngine.js"
import { Router } from "../../routing/Router.js"

/** `/v1/policies/evaluate` and `/v1/routes`: both judge through the same policy evaluation. */
export const PolicyHandlers = HttpApiBuilder.group(SextantApi, "policy", (handlers) =>
  Effect.gen(function* () {
    const engine = yield* PolicyEngine
    const router = yield* Router
    return (
      handlers
        .handle("evaluate", ({ payload }) => engine.evaluate(payload))
        // A route answer is plain JSON data (its schema's encoded form is its type), so it is
        // serialised directly: encoding it through the schema was about a fifth of a route's CPU.
        // test/routing.unit.test.ts holds the two serialisations equal.
        .handle("route", ({ payload }) =>
          Effect.map(router.route(payload), (decision) => HttpServerResponse.unsafeJson(decision))
        )
    )
  })
)
