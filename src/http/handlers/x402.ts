import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { BazaarIngest, type PaymentRequest } from "../../catalog/BazaarIngest.js"
import { Principal } from "../../contract/auth.js"
import { SextantApi } from "../../contract/index.js"
import { settleRefusal, verifyRefusal } from "../../contract/x402.js"
import { type BazaarStatus, extensionResponsesHeader } from "../../extensions/bazaar.js"
import { idempotencyKeyOf } from "../../extensions/paymentIdentifier.js"
import { IdempotentVerify } from "../../settlement/IdempotentVerify.js"
import { Settlement } from "../../settlement/Settlement.js"
import { FacilitatorPool } from "../../x402/FacilitatorPool.js"
import { refusalContextOf } from "../x402Refusal.js"

/** The bazaar extension's status, answered in `EXTENSION-RESPONSES` (specs/extensions/bazaar.md). */
const extensionResponses = (status: BazaarStatus | null) =>
  status === null
    ? Effect.void
    : HttpApp.appendPreResponseHandler((_, response) =>
        Effect.succeed(HttpServerResponse.setHeader(response, "EXTENSION-RESPONSES", extensionResponsesHeader(status)))
      )

export const X402Handlers = HttpApiBuilder.group(SextantApi, "x402", (handlers) =>
  Effect.gen(function* () {
    const pool = yield* FacilitatorPool
    const settlement = yield* Settlement
    const verifier = yield* IdempotentVerify
    const bazaar = yield* BazaarIngest
    /** Who asks, once the request's bazaar schema is admitted, and the payment's idempotency key. */
    const admitted = (payload: PaymentRequest, idempotencyKey: string | undefined) =>
      Effect.gen(function* () {
        const principal = yield* Principal
        yield* bazaar.admit(payload)
        return { principal: principal.id, idempotencyKey: yield* idempotencyKeyOf(idempotencyKey, payload) }
      })
    return handlers
      .handle("supported", () => pool.supported)
      .handle("verify", ({ payload, headers }) =>
        Effect.flatMap(admitted(payload, headers["idempotency-key"]), (caller) =>
          verifier.verify({ request: payload, ...caller })
        ).pipe(Effect.mapError((error) => verifyRefusal(error, refusalContextOf(payload))))
      )
      .handle("settle", ({ payload, headers }) =>
        Effect.gen(function* () {
          const caller = yield* admitted(payload, headers["idempotency-key"])
          const { outcome, status } = yield* bazaar.answer(
            payload,
            "/x402/settle",
            settlement.settleReporting({ request: payload, ...caller })
          )
          yield* extensionResponses(status)
          return yield* outcome
        }).pipe(Effect.mapError((error) => settleRefusal(error, refusalContextOf(payload))))
      )
      .handle("facilitators", () => Effect.map(pool.status, (facilitators) => ({ facilitators })))
      .handle("settlements", ({ urlParams }) =>
        Effect.flatMap(Principal, (principal) =>
          Effect.map(settlement.list(urlParams, principal.id), (settlements) => ({ settlements }))
        )
      )
      .handle("settlement", ({ path }) =>
        Effect.flatMap(Principal, (principal) => settlement.get(path.id, principal.id))
      )
  })
).pipe(Layer.provide(Layer.mergeAll(IdempotentVerify.Live, BazaarIngest.Live)))
