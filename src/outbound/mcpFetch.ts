import { Data, Effect, Either, Runtime } from "effect"
import { isTaggedAs } from "../domain/tagged.js"
import { Dialer, dialPinned, Resolver, readUpTo } from "./Connector.js"
import { AnswerTimeout, type OutboundRequests, Unreachable } from "./fetchAnswer.js"
import { incoming, outgoing, type RequestBudget } from "./mcpWire.js"
import { type OutboundTargetRefused, vetTarget } from "./outboundGuard.js"

/** An MCP request's failure as the probe outcomes name them. */
export type Failure = OutboundTargetRefused | Unreachable | AnswerTimeout

/** Thrown inside the transport's fetch, so the probe can tell the guard's refusal from a dead server. */
export class McpTargetRefused extends Data.TaggedError("McpTargetRefused")<{
  readonly refusal: OutboundTargetRefused
  readonly message: string
}> {}

/**
 * The transport's `fetch`, on the one outbound path of every request to a resource: the URL vetted
 * by the outbound guard (every request, so a name that rebinds is caught), the connection pinned
 * to the checked address, `timeoutMs` per request and at most `maxBodyBytes` of an answer read.
 * Only POSTs of messages this client decided to send leave (`mcpWire.outgoing`), each taken from
 * `budget`; an answer reaches the SDK only as the one response to its request
 * (`mcpWire.incoming`), so the SDK never sees, let alone answers, a server request. No standalone
 * GET stream is opened: a probe waits for no server notification.
 */
export const guardedFetch =
  (probes: OutboundRequests, runtime: Runtime.Runtime<never>, budget: RequestBudget) =>
  async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const method = init?.method ?? "GET"
    if (method !== "POST") return new Response(null, { status: 405 })
    const message = outgoing(init?.body)
    if ("refused" in message) throw new Error(message.refused)
    if (!budget.take()) throw new Error("the requests allowed to this MCP client are spent")
    const url = input instanceof Request ? input.url : String(input)
    const resolve = Runtime.runSync(runtime)(Resolver)
    const vetted = await Runtime.runPromise(runtime)(Effect.either(vetTarget(url, probes, resolve)))
    if (Either.isLeft(vetted)) {
      const e = vetted.left
      throw e._tag === "OutboundTargetRefused"
        ? new McpTargetRefused({ refusal: e, message: e.reason })
        : new Error(`cannot resolve ${e.host}: ${e.reason}`)
    }
    const headers: Record<string, string> = {}
    new Headers(init?.headers).forEach((value, key) => {
      headers[key] = value
    })
    const signal = AbortSignal.any([AbortSignal.timeout(probes.timeoutMs), ...(init?.signal ? [init.signal] : [])])
    const response = await dialPinned(Runtime.runSync(runtime)(Dialer), vetted.right, {
      method,
      headers,
      ...(typeof init?.body === "string" ? { body: init.body } : {}),
      signal
    })
    const bytes = await readUpTo(response, probes.maxBodyBytes)
    if (bytes === null) throw new Error(`answer over ${probes.maxBodyBytes} bytes was not read`)
    const answerHeaders = new Headers(response.headers)
    answerHeaders.delete("content-length")
    answerHeaders.delete("transfer-encoding")
    // The SDK follows a same-origin 307/308 itself by sending the same body again: a server could
    // make it resend a (paid) call. A redirect is a refusal here, never followed.
    answerHeaders.delete("location")
    // A refusal keeps its status and text (a 404 tells the session is gone); a notification's answer is read no further.
    if (!response.ok)
      return new Response(response.status === 204 ? null : new Uint8Array(bytes), {
        status: response.status,
        headers: answerHeaders
      })
    if (message.id === null) return new Response(null, { status: 202, headers: answerHeaders })
    const answer = incoming(message.id, response.headers.get("content-type"), bytes.toString("utf8"))
    if ("refused" in answer) throw new Error(answer.refused)
    answerHeaders.set("content-type", "application/json")
    return new Response(answer.response, { status: 200, headers: answerHeaders })
  }

export const failureOf = (error: unknown, deadline: AbortSignal, timeoutMs: number): Failure => {
  if (isTaggedAs<McpTargetRefused>(error, "McpTargetRefused")) return error.refusal
  if (deadline.aborted || (error instanceof Error && /timed? ?out/i.test(error.message)))
    return new AnswerTimeout({ afterMs: timeoutMs })
  return new Unreachable({ reason: `MCP request failed: ${error instanceof Error ? error.message : String(error)}` })
}
