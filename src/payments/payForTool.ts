import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Either, Option, Schema } from "effect"
import { z } from "zod"
import pkg from "../../package.json" with { type: "json" }
import { SettleResponse } from "../domain/x402.js"
import { canonicalBytes } from "../encoding/canonicalJson.js"
import type { OutboundRequests } from "../verification/fetchAnswer.js"
import { Unreachable } from "../verification/fetchAnswer.js"
import { mcpChallenge, PAYMENT_META, PAYMENT_RESPONSE_META, readToolAnswer, X402_MCP_EXTENSION } from "../verification/mcpAnswer.js"
import { failureOf, guardedFetch } from "../verification/mcpProbe.js"
import { CALL_REQUESTS, HANDSHAKE_REQUESTS, RequestBudget } from "../verification/mcpWire.js"
import { type Authorization, NoPaymentRequired, PaymentOutcomeUnknown } from "./errors.js"
import { type PaidAnswer, type PayForError, type PaymentTerms, sellerReceiptOf, sendWithResends, signChosen } from "./payFor.js"

export interface PayForToolInput extends PaymentTerms {
  /** The MCP server's Streamable HTTP endpoint. */
  readonly url: string
  readonly toolName: string
  /** The tool's arguments, sent with both calls. */
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

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

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

const connect = (input: PayForToolInput, fetchTimeoutMs: number) =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const runtime = yield* Effect.runtime<never>()
      return yield* Effect.tryPromise({
        try: async (signal) => {
          const client = new Client({ name: "sextant-buyer", version: pkg.version }, { capabilities: { extensions: { [X402_MCP_EXTENSION]: {} } } })
          // Every request passes the outbound guard; the fetch bound is the paid call's, each call sets its own.
          // The handshake, the unpaid call and the paid one: nothing else leaves, whatever the server asks.
          const budget = new RequestBudget(HANDSHAKE_REQUESTS + 2 * CALL_REQUESTS)
          const fetch = guardedFetch({ ...input.outbound, timeoutMs: fetchTimeoutMs }, runtime, budget)
          await client.connect(new StreamableHTTPClientTransport(new URL(input.url), { fetch }), { signal, timeout: input.outbound.timeoutMs })
          return client
        },
        catch: (error) => failureOf(error, NOT_ABORTED, input.outbound.timeoutMs)
      })
    }),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

const callTool = (client: Client, input: PayForToolInput, timeoutMs: number, meta?: Record<string, unknown>) =>
  Effect.tryPromise({
    try: (signal) =>
      client.request(
        { method: "tools/call", params: { name: input.toolName, arguments: input.arguments, ...(meta === undefined ? {} : { _meta: meta }) } },
        AnyResult,
        { signal, timeout: timeoutMs }
      ),
    catch: (error) => error
  })

/** A JSON-RPC error the server sent, not one the SDK raised for a timeout or a lost connection. */
const answeredError = (error: unknown): error is McpError =>
  error instanceof McpError && error.code !== ErrorCode.RequestTimeout && error.code !== ErrorCode.ConnectionClosed

/** The unpaid call: its PaymentRequired, or why there is nothing to pay. */
const askPrice = (client: Client, input: PayForToolInput) =>
  callTool(client, input, input.outbound.timeoutMs).pipe(
    Effect.mapError((error) =>
      answeredError(error) ? new NoPaymentRequired({ httpStatus: 200, toolAnswer: `a JSON-RPC error (${error.message.slice(0, 200)})` }) : failureOf(error, NOT_ABORTED, input.outbound.timeoutMs)
    ),
    Effect.map(readToolAnswer),
    Effect.flatMap((answer) => {
      switch (answer._tag) {
        case "PaymentRequired":
          return Effect.succeed(answer.paymentRequired)
        case "Executed":
          return Effect.fail(new NoPaymentRequired({ httpStatus: 200, toolAnswer: "a tool result without asking for payment" }))
        case "NoChallenge":
          return Effect.fail(new NoPaymentRequired({ httpStatus: 200, toolAnswer: answer.reason }))
      }
    })
  )

/**
 * One send of the paid call. Anything short of a result is PaymentOutcomeUnknown, a JSON-RPC error
 * included: the seller may have settled before failing, so the buyer fails closed (and resends only
 * under a payment identifier, `sendWithResends`).
 */
const sendPaid = (client: Client, input: PayForToolInput, payload: unknown, authorization: Authorization) => {
  const timeoutMs = input.paidTimeoutMs ?? DEFAULT_PAID_TIMEOUT_MS
  return callTool(client, input, timeoutMs, { [PAYMENT_META]: payload }).pipe(
    Effect.timed,
    Effect.mapError((error) => new PaymentOutcomeUnknown({ reason: error instanceof Error ? error.message : String(error), authorization })),
    Effect.map(([elapsed, result]) => ({ latencyMs: Duration.toMillis(elapsed), ...paidToolAnswer(result, input.outbound.maxBodyBytes) }))
  )
}

/**
 * Pays for one MCP tool call over the x402 MCP transport, as `payFor` pays an HTTP request: the
 * tool called unpaid in a session opened through the outbound guard; the PaymentRequired of
 * either binding read by the HTTP challenge decoder; the option chosen and signed by `signChosen`
 * (the same checks, price limit and timeout cap, a payment identifier when offered); the call sent
 * again with the payload in `params._meta["x402/payment"]`, resent only as `sendWithResends` allows;
 * the settlement read from `result._meta["x402/payment-response"]`.
 */
export const payForTool = (input: PayForToolInput): Effect.Effect<PaidAnswer, PayForError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* connect(input, Math.max(input.outbound.timeoutMs, input.paidTimeoutMs ?? DEFAULT_PAID_TIMEOUT_MS))
      const paymentRequired = yield* askPrice(client, input)
      const { requirements, paymentPayload, authorization, paymentIdentifier } = yield* signChosen(mcpChallenge(paymentRequired), input)
      // A tool result, even an error, says what happened: only a call that got no result is resent.
      const paid = yield* sendWithResends(sendPaid(client, input, paymentPayload, authorization), () => null, authorization, paymentIdentifier)
      return { url: input.url, requirements, amount: requirements.amount, authorization, paymentIdentifier, ...paid }
    })
  ).pipe(Effect.catchTag("AnswerTimeout", (timeout) => new Unreachable({ reason: timeout.reason })))
