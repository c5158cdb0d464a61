import { Data, Effect } from "effect"
import type { ProbesConfig } from "../config.js"
import type { HttpMethod } from "../domain/resources.js"
import { Dialer, dialPinned, Resolver, readUpTo } from "./Connector.js"
import { type OutboundPolicy, type OutboundTargetRefused, type Vetted, vetTarget } from "./outboundGuard.js"

/** Redirects followed before a probe gives up; each hop is checked like the first. */
const MAX_REDIRECTS = 5

/**
 * What an outbound request to a resource needs: the guard's policy, the timeout and the body cap.
 * Probes pass their `probes` config; a buyer passes its own (`buyer` in the config).
 */
export type OutboundRequests = OutboundPolicy & Pick<ProbesConfig, "timeoutMs" | "maxBodyBytes">

export class Unreachable extends Data.TaggedError("Unreachable")<{ readonly reason: string }> {}

/** No complete answer within `timeoutMs`, from the first DNS lookup to the last body byte read. */
export class AnswerTimeout extends Data.TaggedError("AnswerTimeout")<{ readonly afterMs: number }> {
  get reason() {
    return `no answer within ${this.afterMs} ms`
  }
}

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

/** Which answers have their body read, how much of it at most, and how it is decoded (JSON unless said). */
interface BodyRead {
  readonly when: (status: number, header: (name: string) => string | undefined) => boolean
  readonly maxBytes: number
  readonly decode?: (text: string) => unknown
}

/** A probe reads the body only where a v1 challenge may be: a 402 without the v2 header. */
const challengeBody = (probes: OutboundRequests): BodyRead => ({
  when: (status, header) => status === 402 && header("payment-required") === undefined,
  maxBytes: probes.maxBodyBytes
})

/** The socket-level reason (ECONNREFUSED, a TLS failure...) of a failed fetch. */
const causeOf = (cause: unknown) => {
  if (typeof cause !== "object" || cause === null) return String(cause)
  const { code, message } = cause as { code?: unknown; message?: unknown }
  return typeof code === "string" ? code : typeof message === "string" ? message : "unknown"
}

/** Reads at most `maxBytes` of the body, decoded (undefined when it does not decode), then lets the rest go. */
const readCapped = async (response: Response, maxBytes: number, decode: (text: string) => unknown = JSON.parse) => {
  let bytes: Buffer | null
  try {
    bytes = await readUpTo(response, maxBytes)
  } catch {
    return { body: undefined, note: "body could not be read" }
  }
  if (bytes === null) return { body: undefined, note: `body over ${maxBytes} bytes was not read` }
  try {
    return { body: decode(bytes.toString("utf8")), note: null }
  } catch {
    return { body: undefined, note: null }
  }
}

/** Methods whose input travels as a JSON body; the others carry it in the query string. */
export const sendsBody = (method: HttpMethod) => method === "POST" || method === "PUT" || method === "PATCH"

const REQUEST_HEADERS = { accept: "application/json", "user-agent": "sextant-probe/0.1" }

/**
 * A request to a resource, unpaid or paid (`headers` add the payment). Body methods get `body`
 * (JSON text), an empty JSON object by default: paywalls answer 402 before reading it, and some
 * servers refuse a POST without any body. A buyer sends its input in both requests, so the paid
 * one differs from the one that was priced by the payment only.
 */
export const resourceRequest = (method: HttpMethod, body = "{}", headers: Record<string, string> = {}) =>
  sendsBody(method)
    ? { method, headers: { ...REQUEST_HEADERS, "content-type": "application/json", ...headers }, body }
    : { method, headers: { ...REQUEST_HEADERS, ...headers } }

type Step =
  | { readonly _tag: "Redirect"; readonly next: string; readonly status: number }
  | { readonly _tag: "Answer"; readonly answer: Answer }

/**
 * One request with Bun's own fetch, pinned to the vetted address: the probe path's hot spot, where
 * Effect's HttpClient (request and response wrappers, a scope, a body stream) cost three times the
 * request itself (bench/scale). Aborted by the deadline or by the fiber's interruption; what of the
 * body is not read is dropped.
 */
const send = (target: Vetted, method: HttpMethod, read: BodyRead, deadline: Deadline, requestBody?: string) =>
  Effect.flatMap(Dialer, (dial) =>
    Effect.tryPromise({
      try: async (interrupted): Promise<Step> => {
        const response = await dialPinned(dial, target, {
          ...resourceRequest(method, requestBody),
          signal: AbortSignal.any([interrupted, deadline.signal])
        })
        const header = (name: string) => response.headers.get(name) ?? undefined
        const location = header("location")
        if (REDIRECTS.has(response.status) && location !== undefined) {
          void response.body?.cancel().catch(() => undefined)
          return { _tag: "Redirect", next: new URL(location, target.url).href, status: response.status }
        }
        const keep = read.when(response.status, header)
        if (!keep) void response.body?.cancel().catch(() => undefined)
        const { body, note } = keep
          ? await readCapped(response, read.maxBytes, read.decode)
          : { body: undefined, note: null }
        return { _tag: "Answer", answer: { url: target.url.href, httpStatus: response.status, header, body, note } }
      },
      catch: (e) =>
        deadline.signal.aborted ? deadline.timeout() : new Unreachable({ reason: `fetch failed: ${causeOf(e)}` })
    })
  )

/** A whole request's time limit, redirects and DNS lookups included. */
interface Deadline {
  readonly signal: AbortSignal
  readonly timeout: () => AnswerTimeout
}

const deadlineOf = (timeoutMs: number): Deadline => ({
  signal: AbortSignal.timeout(timeoutMs),
  timeout: () => new AnswerTimeout({ afterMs: timeoutMs })
})

/** `effect`, failing with the deadline's timeout if it runs out first (a DNS lookup cannot be aborted). */
const within = <A, E>(effect: Effect.Effect<A, E>, deadline: Deadline): Effect.Effect<A, E | AnswerTimeout> =>
  deadline.signal.aborted
    ? Effect.fail(deadline.timeout())
    : Effect.raceFirst(
        effect,
        Effect.async<never, AnswerTimeout>((resume) => {
          const onAbort = () => resume(Effect.fail(deadline.timeout()))
          deadline.signal.addEventListener("abort", onAbort, { once: true })
          return Effect.sync(() => deadline.signal.removeEventListener("abort", onAbort))
        })
      )

/**
 * One hop: guard the target, send, and either follow a redirect (by re-entering with the next
 * hop's URL) or answer.
 */
const hop = (
  url: string,
  method: HttpMethod,
  redirectsLeft: number,
  probes: OutboundRequests,
  read: BodyRead,
  deadline: Deadline,
  requestBody?: string
): Effect.Effect<Answer, OutboundTargetRefused | Unreachable | AnswerTimeout> =>
  Effect.gen(function* () {
    const resolve = yield* Resolver
    const target = yield* vetTarget(url, probes, (host) => within(resolve(host), deadline)).pipe(
      Effect.catchTag("DnsFailure", (e) => new Unreachable({ reason: `cannot resolve ${e.host}: ${e.reason}` }))
    )
    const step = yield* send(target, method, read, deadline, requestBody)
    if (step._tag === "Answer") return step.answer
    if (redirectsLeft === 0) {
      return {
        url: target.url.href,
        httpStatus: step.status,
        header: () => undefined,
        body: undefined,
        note: `stopped after ${MAX_REDIRECTS} redirects`
      } satisfies Answer
    }
    return yield* hop(
      step.next,
      step.status === 303 ? "GET" : method,
      redirectsLeft - 1,
      probes,
      read,
      deadline,
      requestBody
    )
  })

/**
 * Sends the probe request (with `body` for body methods, `{}` by default), following at most
 * MAX_REDIRECTS redirects, each one guarded.
 */
export const fetchAnswer = (url: string, method: HttpMethod, probes: OutboundRequests, body?: string) =>
  Effect.suspend(() =>
    hop(url, method, MAX_REDIRECTS, probes, challengeBody(probes), deadlineOf(probes.timeoutMs), body)
  )

/**
 * A GET of a JSON document a caller named (an origin's OpenAPI document, its `/.well-known/x402`),
 * with the same outbound guard and redirect rule as a probe; the body of a 2xx answer is read up to
 * `maxBytes` (undefined when it is not JSON or larger).
 */
export const fetchJson = (url: string, probes: OutboundRequests, maxBytes: number) =>
  Effect.suspend(() =>
    hop(
      url,
      "GET",
      MAX_REDIRECTS,
      probes,
      { when: (status) => status >= 200 && status < 300, maxBytes },
      deadlineOf(probes.timeoutMs)
    )
  )

/**
 * A GET of a text document (an issuer's `stellar.toml`) on the same path as `fetchJson`: the body
 * of a 2xx answer, up to `maxBytes`, decoded by `decode` (undefined when it throws).
 */
export const fetchText = (url: string, probes: OutboundRequests, maxBytes: number, decode: (text: string) => unknown) =>
  Effect.suspend(() =>
    hop(
      url,
      "GET",
      MAX_REDIRECTS,
      probes,
      { when: (status) => status >= 200 && status < 300, maxBytes, decode },
      deadlineOf(probes.timeoutMs)
    )
  )
