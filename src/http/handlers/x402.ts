import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Settlement } from "../../settlement/Settlement.js"
import { FacilitatorPool } from "../../x402/FacilitatorPool.js"
import { SextantApi } from "../api/index.js"
import { Principal } from "../auth.js"

export const X402Handlers = HttpApiBuilder.group(SextantApi, "x402", (handlers) =>
  Effect.gen(function* () {
    const pool = yield* FacilitatorPool
    const settlement = yield* Settlement
    return handlers
      .handle("supported", () => pool.supported)
      .handle("verify", ({ payload }) => pool.verify(payload))
      .handle("settle", ({ payload, headers }) =>
        Effect.flatMap(Principal, (principal) =>
          settlement.settle({ request: payload, idempotencyKey: headers["idempotency-key"], principal: principal.id })
        )
      )
      .handle("facilitators", () => Effect.map(pool.status, (facilitators) => ({ facilitators })))
      .handle("settlements", ({ urlParams }) =>
        Effect.flatMap(Principal, (principal) =>
          Effect.map(settlement.list(urlParams, principal.id), (settlements) => ({ settlements }))
        )
      )
      .handle("settlement", ({ path }) => Effect.flatMap(Principal, (principal) => settlement.get(path.id, principal.id)))
  })
)
