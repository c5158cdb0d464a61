import { FetchHttpClient, HttpClient, HttpClientRequest, type HttpClientResponse } from "@effect/platform"
import { Data, Effect, Stream } from "effect"
import type { ProbesConfig } from "../config.js"
import type { HttpMethod } from "../domain/resources.js"
import { guardTarget, type OutboundPolicy, type TargetRefused } from "./outboundGuard.js"

/** Redirects followed before a probe gives up; each hop is checked like the first. */
const MAX_REDIRECTS = 5

/**
 * What an outbound request to a resource needs: the guard's policy, the timeout and the body cap.
 * Probes pass their `probes` config; a buyer passes its own (`buyer` in the config).
 */
export type OutboundRequests = OutboundPolicy & Pick<ProbesConfig, "timeoutMs" | "maxBodyBytes">

export class Unreachable extends Data.TaggedError("Unreachable")<{ readonly reason: string }> {}

/** The final answer of a probe, copied out of the response so the connection can close. */
export interface Answer {
  readonly url: string
  readonly httpStatus: number
  readonly header: (name: string) => string | undefined
  /** The JSON body when a v1 challenge may be in it (a 402 without the v2 header), else undefined. */
  readonly body: unknown
  /** Why the answer is incomplete: a body over the cap, or too many redirects. */
  readonly note: string | null
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/** Which answers have their JSON body read, and how much of it at most. */
interface BodyRead {
  readonly when: (status: number, header: (name: string) => string | undefined) => boolean
  readonly maxBytes: number
}

/** A probe reads the body only where a v1 challenge may be: a 402 without the v2 header. */
const challengeBody = (probes: OutboundRequests): BodyRead => ({
  when: (status, header) => status === 402 && header("payment-required") === undefined,
  maxBytes: probes.maxBodyBytes
})

/** The socket-level reason (ECONNREFUSED, a TLS failure...) that the client's own message leaves out. */
const causeOf = (cause: unknown) => {
  if (typeof cause !== "object" || cause === null) return String(cause)
  const { code, message } = cause as { code?: unknown; message?: unknown }
  return typeof code === "string" ? code : typeof message === "string" ? message : "unknown"
}

const readCapped = (response: HttpClientResponse.HttpClientResponse, maxBytes: number) =>
  Stream.runFoldWhile(
    response.stream,
    { bytes: 0, chunks: [] as Array<Uint8Array> },
    (acc) => acc.bytes <= maxBytes,
    (acc, chunk) => {
      acc.chunks.push(chunk)
      return { bytes: acc.bytes + chunk.length, chunks: acc.chunks }
    }
  ).pipe(
    Effect.map(({ bytes, chunks }) => {
      if (bytes > maxBytes) return { body: undefined, note: `body over ${maxBytes} bytes was not read` }
      try {
        return { body: JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown, note: null }
      } catch {
        return { body: undefined, note: null }
      }
    }),
    Effect.catchAll(() => Effect.succeed({ body: undefined, note: "body could not be read" }))
  )

/** Methods whose input travels as a JSON body; the others carry it in the query string. */
export const sendsBody = (method: HttpMethod) => method === "POST" || method === "PUT" || method === "PATCH"

/**
 * A request to a resource, unpaid or paid (`headers` add the payment). Body methods get `body`
 * (JSON text), an empty JSON object by default: paywalls answer 402 before reading it, and some
 * servers refuse a POST without any body. A buyer sends its input in both requests, so the paid
 * one differs from the one that was priced by the payment only.
 */
export const resourceRequest = (url: URL, method: HttpMethod, body = "{}", headers: Record<string, string> = {}) => {
  const base = HttpClientRequest.make(method)(url).pipe(
    HttpClientRequest.setHeaders({ accept: "application/json", "user-agent": "sextant-probe/0.1", ...headers })
  )
  return sendsBody(method) ? HttpClientRequest.bodyText(base, body, "application/json") : base
}

/**
 * One hop: guard the target, send, and either follow a redirect (by re-entering with the next
 * hop's URL) or copy out the answer. The request is scoped, so leaving the hop aborts whatever
 * of the body was not read.
 */
const hop = (
  url: string,
  method: HttpMethod,
  redirectsLeft: number,
  probes: OutboundRequests,
  read: BodyRead,
  requestBody?: string
): Effect.Effect<Answer, TargetRefused | Unreachable, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const target = yield* guardTarget(url, probes).pipe(
      Effect.catchTag("DnsFailure", (e) => new Unreachable({ reason: `cannot resolve ${e.host}: ${e.reason}` }))
    )
    const client = HttpClient.withScope(yield* HttpClient.HttpClient)
    const step = yield* Effect.scoped(
      Effect.gen(function* () {
        const response = yield* client
          .execute(resourceRequest(target, method, requestBody))
          .pipe(
            Effect.provideService(FetchHttpClient.RequestInit, { redirect: "manual" }),
            Effect.mapError((e) => new Unreachable({ reason: `${e.message}: ${causeOf(e.cause)}` }))
          )
        const header = (name: string) => response.headers[name.toLowerCase()]
        const location = header("location")
        if (REDIRECTS.has(response.status) && location !== undefined) {
          return { _tag: "Redirect" as const, next: new URL(location, target).href, status: response.status }
        }
        const { body, note } = read.when(response.status, header)
          ? yield* readCapped(response, read.maxBytes)
          : { body: undefined, note: null }
        return {
          _tag: "Answer" as const,
          answer: { url: target.href, httpStatus: response.status, header, body, note } satisfies Answer
        }
      })
    )
    if (step._tag === "Answer") return step.answer
    if (redirectsLeft === 0) {
      return {
        url: target.href,
        httpStatus: step.status,
        header: () => undefined,
        body: undefined,
        note: `stopped after ${MAX_REDIRECTS} redirects`
      } satisfies Answer
    }
    return yield* hop(step.next, step.status === 303 ? "GET" : method, redirectsLeft - 1, probes, read, requestBody)
  })

/**
 * Sends the probe request (with `body` for body methods, `{}` by default), following at most
 * MAX_REDIRECTS redirects, each one guarded.
 */
export const fetchAnswer = (url: string, method: HttpMethod, probes: OutboundRequests, body?: string) =>
  hop(url, method, MAX_REDIRECTS, probes, challengeBody(probes), body)

/**
 * A GET of a JSON document a caller named (an origin's OpenAPI document, its `/.well-known/x402`),
 * with the same outbound guard and redirect rule as a probe; the body of a 2xx answer is read up to
 * `maxBytes` (undefined when it is not JSON or larger).
 */
export const fetchJson = (url: string, probes: OutboundRequests, maxBytes: number) =>
  hop(url, "GET", MAX_REDIRECTS, probes, { when: (status) => status >= 200 && status < 300, maxBytes })
