import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Either, Option, Schema } from "effect"
import { z } from "zod"
import pkg from "../../package.json" with { type: "json" }
import { isObject } from "../domain/isObject.js"
import { type McpKind, mcpRequestOf } from "../domain/mcp.js"
import { isTaggedAs } from "../domain/tagged.js"
import { SettleResponse } from "../domain/x402.js"
import { canonicalBytes } from "../encoding/canonicalJson.js"
import type { OutboundRequests } from "../outbound/fetchAnswer.js"
import { Unreachable } from "../outbound/fetchAnswer.js"
import { failureOf, guardedFetch } from "../outbound/mcpFetch.js"
import { CALL_REQUESTS, HANDSHAKE_REQUESTS, RequestBudget, STATELESS_REQUESTS } from "../outbound/mcpWire.js"
import { mcpChallenge, PAYMENT_META, PAYMENT_RESPONSE_META, readToolAnswer } from "../x402/mcpAnswer.js"
import {
  CLIENT_CAPABILITIES,
  discover,
  type McpAnswerError,
  type McpGeneration,
  sessionRequestMeta,
  statelessRequest
} from "../x402/mcpStateless.js"
import { type Authorization, NoPaymentRequired, PaymentOutcomeUnknown } from "./errors.js"
import { type PaidReply, unknownOutcomeOf } from "./paidOutcome.js"
import {
  type PaidAnswer,
  type PayForError,
  type PaymentTerms,
  RESEND_DELAYS_MS,
  sellerReceiptOf,
  sendWithResends,
  signChosen
} from "./payFor.js"

export interface PayForToolInput extends PaymentTerms {
  /** The MCP server's Streamable HTTP endpoint. */
  readonly url: string
  /** What is bought: a tool (the default), a resource or a prompt. */
  readonly kind?: McpKind
  /** The tool's or prompt's name, the resource's URI. */
  readonly toolName: string
  /** The tool's (or prompt's) arguments, sent with both calls. */
  readonly arguments: Readonly<Record<string, unknown>>
  /** The outbound guard's policy, the unpaid call's timeout and the answer cap. */
  readonly outbound: OutboundRequests
  /** Bound on the paid call, which waits for the seller to settle (default 60 s). */
  readonly paidTimeoutMs?: number
}

const DEFAULT_PAID_TIMEOUT_MS = 60_000
/** The SDK reports its own timeouts, so no deadline signal is needed to name one. */
const NOT_ABORTED = new AbortController().signal

/** Any JSON-RPC result, unknown members kept: `_meta` and the extension binding's `resultType` must survive. */
const AnyResult = z.looseObject({})
type ToolResult = z.infer<typeof AnyResult>

/** The seller's SettlementResponse in `result._meta["x402/payment-response"]`, null when absent or malformed. */
export const toolPaymentResponse = (result: ToolResult) => {
  const meta = isObject(result._meta) ? result._meta[PAYMENT_RESPONSE_META] : undefined
  return Option.getOrNull(Schema.decodeUnknownOption(SettleResponse)(meta))
}

/**
 * The paid tool result as the HTTP path reads a paid body: its canonical JSON is the body (what the
 * receipt's digest covers and the buyer prints), and an error result, or a second payment request,
 * is not delivered. The HTTP status is the call's own (200: the tool call was answered).
 */
export const paidToolAnswer = (result: ToolResult, maxBodyBytes: number) => {
  const bytes = Either.getOrNull(canonicalBytes(result))
  const body = bytes === null || bytes.byteLength > maxBodyBytes ? null : Buffer.from(bytes)
  return {
    status: 200,
    paymentResponse: toolPaymentResponse(result),
    sellerReceipt: sellerReceiptOf(toolPaymentResponse(result)),
    contentType: "application/json",
    bodyIsJson: body === null ? null : true,
    body,
    toolError: result.isError === true || result.resultType === "payment_required"
  }
}

/** An error answer's code saying the seller tried to settle and nobody confirmed it (the vertical's `SETTLEMENT_UNCONFIRMED`). */
const UNCONFIRMED_SETTLE = /^SETTLEMENT_UNCONFIRMED\b/

/**
 * A paid MCP result as the HTTP rule (`unknownOutcomeOf`) reads a paid reply, so one rule judges
 * both transports: a result that is not an error was delivered (a 2xx); a new payment request is a
 * 402 with a challenge; an error result whose code says nobody confirmed the settle is a gateway's
 * 502 (money may have moved); any other error result is the handler's own failure (a 500: the order
 * of the x402 transport settles only after the work succeeded). The SettlementResponse in `_meta`
 * is the `PAYMENT-RESPONSE`.
 */
export const mcpPaidReply = (result: ToolResult): PaidReply => {
  const paymentResponse = toolPaymentResponse(result)
  const answer = readToolAnswer(result)
  if (answer._tag === "PaymentRequired") return { status: 402, paymentResponse, challenged: true }
  if (answer._tag === "Executed") return { status: 200, paymentResponse, challenged: false }
  const first = Array.isArray(result.content) ? result.content[0] : undefined
  const text = isObject(first) && typeof first.text === "string" ? first.text : ""
  return { status: UNCONFIRMED_SETTLE.test(text) ? 502 : 500, paymentResponse, challenged: false }
}

/** One read of what is bought, in whichever generation the server speaks; `meta` rides in `params._meta`. */
interface Caller {
  readonly generation: McpGeneration
  readonly call: (
    input: PayForToolInput,
    timeoutMs: number,
    meta?: Record<string, unknown>
  ) => Effect.Effect<ToolResult, unknown>
}

const CLIENT_NAME = "sextant-buyer"

/**
 * Asks `server/discover` first. A 2026-07-28 server is called statelessly: each call one request
 * with the extension advertised in its `_meta`. A 2025-era server gets a session (the x402
 * extension advertised at `initialize`), closed after. Every request passes the outbound guard and
 * takes from one budget, whose size is what the purchase needs: nothing else leaves, whatever the
 * server asks. The fetch bound is the paid call's; each call sets its own.
 */
const connect = (input: PayForToolInput, fetchTimeoutMs: number) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      return yield* Effect.tryPromise({
        try: async (signal): Promise<{ readonly caller: Caller; readonly close: () => Promise<void> }> => {
          const budget = new RequestBudget(STATELESS_REQUESTS)
          const fetch = guardedFetch({ ...input.outbound, timeoutMs: fetchTimeoutMs }, runtime, budget)
          const found = await discover(
            fetch,
            input.url,
            CLIENT_NAME,
            AbortSignal.any([signal, AbortSignal.timeout(input.outbound.timeoutMs)])
          )
          if (found.generation === "2026-07-28") {
            // The unpaid call, the paid one and its resends under a payment identifier.
            budget.grant(STATELESS_REQUESTS * (2 + RESEND_DELAYS_MS.length))
            const call: Caller["call"] = (input, timeoutMs, meta) =>
              Effect.tryPromise({
                try: (signal) =>
                  statelessRequest(
                    fetch,
                    input.url,
                    mcpRequestOf(input.kind ?? "tool", input.toolName, input.arguments, meta),
                    CLIENT_NAME,
                    AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
                  ),
                catch: (error) => error
              })
            return { caller: { generation: found.generation, call }, close: async () => undefined }
          }
          // The handshake, the unpaid call and the paid one.
          budget.grant(HANDSHAKE_REQUESTS + 2 * CALL_REQUESTS)
          const client = new Client({ name: CLIENT_NAME, version: pkg.version }, { capabilities: CLIENT_CAPABILITIES })
          await client.connect(new StreamableHTTPClientTransport(new URL(input.url), { fetch }), {
            signal,
            timeout: input.outbound.timeoutMs
          })
          const call: Caller["call"] = (input, timeoutMs, meta) =>
            Effect.tryPromise({
              try: (signal) =>
                client.request(
                  mcpRequestOf(
                    input.kind ?? "tool",
                    input.toolName,
                    input.arguments,
                    sessionRequestMeta(meta)
                  ) as never,
                  AnyResult,
                  { signal, timeout: timeoutMs }
                ),
              catch: (error) => error
            })
          return { caller: { generation: found.generation, call }, close: () => client.close().catch(() => undefined) }
        },
        catch: (error) => failureOf(error, NOT_ABORTED, input.outbound.timeoutMs)
      })
    }),
    (connection) => Effect.promise(connection.close)
  ).pipe(Effect.map((connection) => connection.caller))

/** A JSON-RPC error the server sent, not one the SDK raised for a timeout or a lost connection. */
const answeredError = (error: unknown): error is Error =>
  isTaggedAs<McpAnswerError>(error, "McpAnswerError") ||
  (error instanceof McpError && error.code !== ErrorCode.RequestTimeout && error.code !== ErrorCode.ConnectionClosed)

/** The unpaid call: its PaymentRequired, or why there is nothing to pay. */
const askPrice = (caller: Caller, input: PayForToolInput) =>
  caller.call(input, input.outbound.timeoutMs).pipe(
    Effect.mapError((error) =>
      answeredError(error)
        ? new NoPaymentRequired({ httpStatus: 200, toolAnswer: `a JSON-RPC error (${error.message.slice(0, 200)})` })
        : failureOf(error, NOT_ABORTED, input.outbound.timeoutMs)
    ),
    Effect.map(readToolAnswer),
    Effect.flatMap((answer) => {
      switch (answer._tag) {
        case "PaymentRequired":
          return Effect.succeed(answer.paymentRequired)
        case "Executed":
          return Effect.fail(
            new NoPaymentRequired({ httpStatus: 200, toolAnswer: "a tool result without asking for payment" })
          )
        case "NoChallenge":
          return Effect.fail(new NoPaymentRequired({ httpStatus: 200, toolAnswer: answer.reason }))
      }
    })
  )

/**
 * One send of the paid call. Anything short of a result is PaymentOutcomeUnknown, a JSON-RPC error
 * included: the seller may have settled before failing, so the buyer fails closed (and resends only
 * under a payment identifier, `sendWithResends`). A result carries its reading as a paid reply.
 */
const sendPaid = (caller: Caller, input: PayForToolInput, payload: unknown, authorization: Authorization) => {
  const timeoutMs = input.paidTimeoutMs ?? DEFAULT_PAID_TIMEOUT_MS
  return caller.call(input, timeoutMs, { [PAYMENT_META]: payload }).pipe(
    Effect.timed,
    Effect.mapError(
      (error) =>
        new PaymentOutcomeUnknown({ reason: error instanceof Error ? error.message : String(error), authorization })
    ),
    Effect.map(([elapsed, result]) => ({
      latencyMs: Duration.toMillis(elapsed),
      ...paidToolAnswer(result, input.outbound.maxBodyBytes),
      reply: mcpPaidReply(result)
    }))
  )
}

/**
 * Pays for one MCP tool call, resource read or prompt over the x402 MCP transport, as `payFor`
 * pays an HTTP request: `server/discover` first, then the call made unpaid (statelessly for a
 * 2026-07-28 server, in a session for a 2025-era one), every request through the outbound guard;
 * the PaymentRequired of either binding (the extension's `payment_required` result, or a tool's
 * error result) read by the HTTP challenge decoder; the option chosen and signed by `signChosen`
 * (the same checks, price limit and timeout cap, a payment identifier when offered); the call sent
 * again with the payload in `params._meta["x402/payment"]`, resent only as `sendWithResends` allows;
 * the settlement read from `result._meta["x402/payment-response"]`.
 */
export const payForTool = (input: PayForToolInput): Effect.Effect<PaidAnswer, PayForError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const caller = yield* connect(
        input,
        Math.max(input.outbound.timeoutMs, input.paidTimeoutMs ?? DEFAULT_PAID_TIMEOUT_MS)
      )
      const paymentRequired = yield* askPrice(caller, input)
      const { requirements, paymentPayload, authorization, paymentIdentifier } = yield* signChosen(
        mcpChallenge(paymentRequired),
        input
      )
      // A result leaving the money's fate unknown is never a refusal: the buyer would pay the next seller too.
      const { reply: _reply, ...paid } = yield* sendWithResends(
        sendPaid(caller, input, paymentPayload, authorization),
        (answer, resent) => unknownOutcomeOf(answer.reply, resent),
        authorization,
        paymentIdentifier
      )
      return { url: input.url, requirements, amount: requirements.amount, authorization, paymentIdentifier, ...paid }
    })
  ).pipe(Effect.catchTag("AnswerTimeout", (timeout) => new Unreachable({ reason: timeout.reason })))
