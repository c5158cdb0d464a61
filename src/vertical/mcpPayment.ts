import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http"
import type { PaymentRequired } from "@x402/core/types"
import { Effect } from "effect"
import { isObject } from "../domain/isObject.js"
import { PAYMENT_META, PAYMENT_RESPONSE_META, X402_MCP_EXTENSION } from "../x402/mcpAnswer.js"
import type { VerticalError } from "./errors.js"
import { type Endpoint, Paywall } from "./Paywall.js"
import type { StellarData } from "./StellarData.js"

/**
 * The x402 MCP transport's seller side (x402 `specs/transports-v2/mcp.md`), shared by the
 * vertical's paid tools, resource reads and prompts: which binding a request is answered in, and
 * the order that keeps a buyer from paying for nothing (input checked, payment verified, data
 * fetched, then settled; the data leaves only with the settlement).
 */

/** Where a 2026-07-28 request carries the client's capabilities: its `_meta` envelope. */
export const CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"

export type Era = "legacy" | "modern"

/**
 * The capabilities this request declared in its own `_meta` (the SDK's envelope of the request, in
 * either generation: a 2025 client may repeat its capabilities there); what a client said at
 * `initialize` never counts, as a stateless server remembers no handshake.
 */
export const requestCapabilities = (meta: unknown): Record<string, unknown> => {
  const declared = isObject(meta) ? meta[CLIENT_CAPABILITIES_META] : undefined
  return isObject(declared) ? declared : {}
}

/** Whether these capabilities name `org.x402/payment`. */
export const advertisesPayment = (capabilities: Record<string, unknown>): boolean => {
  const extensions = capabilities.extensions
  return isObject(extensions) && extensions[X402_MCP_EXTENSION] !== undefined
}

/** What is sold: a tool call, a resource read or a prompt. */
export type PaidKind = "tool" | "resource" | "prompt"

/**
 * Whether this request may be answered `payment_required`: it advertised `org.x402/payment` in its
 * own capabilities, and it is 2026-07-28, or a 2025-era resource read or prompt. A 2025-era tool
 * call keeps the x402 transport's tool-result binding (the only one before 2026-07-28); a resource
 * or prompt has no binding there at all, so one advertised per request is asked in the extension's
 * form rather than never sold.
 */
export const extensionBinding = (era: Era, kind: PaidKind, capabilities: Record<string, unknown>): boolean =>
  advertisesPayment(capabilities) && (era === "modern" || kind !== "tool")

/** Whether the client can answer an embedded elicitation (an `input_required` round). */
export const canElicit = (capabilities: Record<string, unknown>): boolean => isObject(capabilities.elicitation)

/** The PaymentPayload a request carries in `params._meta["x402/payment"]`, when it carries one. */
export const paymentOf = (meta: unknown): Record<string, unknown> | undefined => {
  const payment = isObject(meta) ? meta[PAYMENT_META] : undefined
  return isObject(payment) ? payment : undefined
}

/** How a paid operation ended: delivered (with the settlement), a payment asked, or refused. */
export type PaidOutcome<A> =
  | { readonly _tag: "Delivered"; readonly data: A; readonly settlement: unknown }
  | { readonly _tag: "PaymentAsked"; readonly paymentRequired: PaymentRequired; readonly settlement?: unknown }
  | { readonly _tag: "Refused"; readonly error: string; readonly message: string; readonly settlement?: unknown }

export interface PaidOperation {
  readonly endpoint: Endpoint
  /** What the buyer is charged for: the challenge's `resource`. */
  readonly resource: { readonly url: string; readonly description: string; readonly mimeType: string }
  readonly payment: Record<string, unknown> | undefined
  /** The input checked now; the returned effect fetches the answer when run. */
  readonly query: Effect.Effect<Effect.Effect<unknown, VerticalError, StellarData>, VerticalError>
}

type ErrorAnswer = (e: Exclude<VerticalError, { readonly _tag: "PaymentRequired" }>) => {
  readonly error: string
  readonly message: string
  readonly headers: Record<string, string>
}

/**
 * One paid operation. Without a payment the answer is the price, whatever the input (nothing is
 * run). With one: input checked, payment verified, data fetched, and only then settled; a failure
 * before the settle charges nothing, and a settle that fails or is unconfirmed withholds the data.
 * A settle the facilitator refused asks for payment again, its SettlementResponse attached.
 */
export const runPaid = (
  operation: PaidOperation,
  errorAnswer: ErrorAnswer
): Effect.Effect<PaidOutcome<unknown>, never, Paywall | StellarData> => {
  const ask = (reason: string, settlement?: unknown) =>
    Effect.gen(function* () {
      const paywall = yield* Paywall
      const header = yield* paywall.challenge(operation.endpoint, operation.resource, reason)
      return {
        _tag: "PaymentAsked",
        paymentRequired: decodePaymentRequiredHeader(header),
        ...(settlement !== undefined ? { settlement } : {})
      } as const
    })
  const { payment } = operation
  if (payment === undefined) return ask("Payment required")
  return Effect.gen(function* () {
    const paywall = yield* Paywall
    const query = yield* operation.query
    const verified = yield* paywall.verify(
      operation.endpoint,
      encodePaymentSignatureHeader(payment as Parameters<typeof encodePaymentSignatureHeader>[0])
    )
    // Fetched before settling, so nothing that can fail stands between the charge and the answer.
    const data = yield* query
    const settlement = decodePaymentResponseHeader(yield* paywall.settle(verified))
    return { _tag: "Delivered", data, settlement } as PaidOutcome<unknown>
  }).pipe(
    Effect.catchAll((e: VerticalError): Effect.Effect<PaidOutcome<unknown>, never, Paywall> => {
      if (e._tag === "PaymentRequired") return ask(e.reason ?? "Payment required")
      if (e._tag === "SettlementFailed")
        return ask(`Settlement failed: ${e.message}`, decodePaymentResponseHeader(e.paymentResponse))
      const { error, message, headers } = errorAnswer(e)
      const response = headers["PAYMENT-RESPONSE"]
      return Effect.succeed({
        _tag: "Refused",
        error,
        message,
        ...(response ? { settlement: decodePaymentResponseHeader(response) } : {})
      })
    })
  )
}

/** `_meta` carrying the seller's SettlementResponse, when there is one. */
export const settlementMeta = (settlement: unknown) =>
  settlement === undefined ? {} : { _meta: { [PAYMENT_RESPONSE_META]: settlement } }
