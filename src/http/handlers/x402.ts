import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { BazaarIngest, type SettledPayment } from "../../catalog/BazaarIngest.js"
import { Principal } from "../../contract/auth.js"
import { SextantApi } from "../../contract/index.js"
import { settleRefusal, verifyRefusal } from "../../contract/x402.js"
import { InvalidRequest } from "../../domain/errors.js"
import { BAZAAR, type BazaarStatus, bazaarSchemaRefusal, extensionResponsesHeader } from "../../extensions/bazaar.js"
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

const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

/** A bazaar schema this service would never evaluate (schemaGuard) is refused before any payment is made. */
const admitExtensions = (payload: { readonly paymentPayload: unknown }) => {
  const refused = bazaarSchemaRefusal(payload.paymentPayload)
  return refused === null ? Effect.void : new InvalidRequest({ message: refused })
}

export const X402Handlers = HttpApiBuilder.group(SextantApi, "x402", (handlers) =>
  Effect.gen(function* () {
    const pool = yield* FacilitatorPool
    const settlement = yield* Settlement
    const verifier = yield* IdempotentVerify
    const bazaar = yield* BazaarIngest
    /**
     * Runs the settle, then answers its bazaar extension, whether the payment went through or not:
     * in the `EXTENSION-RESPONSES` header and, on an answer, in its `extensionResponses` field, where
     * 2.27 types it on settle answers. A verify never catalogs (docs/trust.md): it moves no money.
     */
    const withBazaar = <A extends { readonly success: boolean; readonly extensionResponses?: unknown }, E, R>(
      request: { readonly paymentPayload: unknown; readonly paymentRequirements: unknown },
      path: string,
      payment: Effect.Effect<Omit<SettledPayment, "success"> & { readonly answer: A }, E, R>
    ) =>
      payment.pipe(
        Effect.tapError(() => Effect.flatMap(bazaar.respond(request, null, path), extensionResponses)),
        Effect.flatMap((settled) =>
          Effect.map(
            Effect.tap(
              bazaar.respond(request, { ...settled, success: settled.answer.success }, path),
              extensionResponses
            ),
            (status): A =>
              status === null
                ? settled.answer
                : {
                    ...settled.answer,
                    extensionResponses: { ...asRecord(settled.answer.extensionResponses), [BAZAAR]: status }
                  }
          )
        )
      )
    return handlers
      .handle("supported", () => pool.supported)
      .handle("verify", ({ payload, headers }) =>
        Effect.gen(function* () {
          const principal = yield* Principal
          yield* admitExtensions(payload)
          const idempotencyKey = yield* idempotencyKeyOf(headers["idempotency-key"], payload)
          return yield* verifier.verify({ request: payload, idempotencyKey, principal: principal.id })
        }).pipe(Effect.mapError((error) => verifyRefusal(error, refusalContextOf(payload))))
      )
      .handle("settle", ({ payload, headers }) =>
        Effect.gen(function* () {
          const principal = yield* Principal
          yield* admitExtensions(payload)
          const idempotencyKey = yield* idempotencyKeyOf(headers["idempotency-key"], payload)
          return yield* withBazaar(
            payload,
            "/x402/settle",
            settlement.settleReporting({ request: payload, idempotencyKey, principal: principal.id })
          )
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
