import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Clock, Effect, Either, type Runtime } from "effect"
import { z } from "zod"
import pkg from "../../package.json" with { type: "json" }
import type { Config } from "../config.js"
import type { McpTool } from "../domain/mcp.js"
import { type McpKind, mcpRequestOf } from "../domain/mcp.js"
import { isTaggedAs } from "../domain/tagged.js"
import { judgeOffers } from "../extensions/offerReceipt.js"
import type { OutboundRequests } from "../outbound/fetchAnswer.js"
import { failureOf, guardedFetch } from "../outbound/mcpFetch.js"
import { CALL_REQUESTS, HANDSHAKE_REQUESTS, RequestBudget, STATELESS_REQUESTS } from "../outbound/mcpWire.js"
import { asHttpChallenge, readToolAnswer } from "../x402/mcpAnswer.js"
import { discover, type McpAnswerError, sessionRequestMeta, statelessRequest } from "../x402/mcpStateless.js"
import type { McpSession, McpSessions } from "./mcpSessions.js"
import {
  blank,
  failureObservation,
  type Observed,
  observationOf,
  type ProbeTarget,
  withOfferVerdict
} from "./observe.js"

/** Any JSON-RPC result object, unknown members kept: the extension binding's `resultType` must survive. */
const AnyResult = z.looseObject({})

const PROBE_CLIENT = "sextant-probe"

/** A JSON-RPC error is the server's answer: no challenge. */
const answeredNoChallenge = (error: Error) =>
  Either.right({ _tag: "NoChallenge" as const, reason: `the server answered an error: ${error.message.slice(0, 200)}` })

/**
 * The unpaid read in a 2025-era server's session (opened when there is none within the interval);
 * a session the server no longer knows (it restarted) is replaced once within the probe.
 */
const inSession = async (
  target: ProbeTarget,
  request: ReturnType<typeof mcpRequestOf>,
  sessions: McpSessions,
  startMs: number,
  runtime: Runtime.Runtime<never>,
  deadline: AbortSignal,
  timeoutMs: number
) => {
  const call = async (session: McpSession) => {
    const use = session.begin()
    try {
      return await (await session.ready).request(request as never, AnyResult, { signal: deadline, timeout: timeoutMs })
    } finally {
      use.done()
    }
  }
  let session = sessions.session(target.url, startMs, runtime, deadline)
  try {
    try {
      return Either.right(readToolAnswer(await call(session)))
    } catch (error) {
      if (!(error instanceof StreamableHTTPError && error.code === 404)) throw error
      sessions.forget(target.url, session)
      session = sessions.session(target.url, startMs, runtime, deadline)
      return Either.right(readToolAnswer(await call(session)))
    }
  } catch (error) {
    // A JSON-RPC error is the server's answer; anything else leaves the session in doubt.
    if (error instanceof McpError && error.code !== ErrorCode.RequestTimeout) return answeredNoChallenge(error)
    sessions.forget(target.url, session)
    return Either.left(failureOf(error, deadline, timeoutMs))
  }
}

/**
 * One probe of what an MCP resource sells (a tool, a resource or a prompt): an unpaid
 * `tools/call` (with the tool's example arguments, or none), `resources/read` or `prompts/get`,
 * within `probes.timeoutMs`. `server/discover` is asked first, unless a session with the server is
 * open within the interval (it is known to speak 2025-era MCP): a 2026-07-28 server is read
 * statelessly (two requests, no `initialize`, nothing kept); a 2025-era one in the server's
 * bounded session (`mcpSessions`: at most one `initialize` per probe interval). The
 * PaymentRequired of either binding goes through the HTTP challenge decoder and the HTTP
 * observation rules; the observation's `method` names the request and the binding that answered.
 * A result that is not an error ran unpaid: `executed_unpaid`. A JSON-RPC error answer (an
 * unknown tool) is `no_challenge`. Never fails.
 */
export const observeMcp = (target: ProbeTarget & { readonly mcp: McpTool }, config: Config, sessions: McpSessions) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    const startMs = yield* Clock.currentTimeMillis
    const timeoutMs = config.probes.timeoutMs
    const kind: McpKind = target.mcp.kind ?? "tool"
    // The capabilities ride in `_meta` in either generation: a 2025-era server that reads the
    // extension per request can ask payment of a resource or prompt only so.
    const request = mcpRequestOf(kind, target.mcp.toolName, target.mcp.example ?? {}, sessionRequestMeta())
    const outcome = yield* Effect.promise(async (interrupted) => {
      const deadline = AbortSignal.any([AbortSignal.timeout(timeoutMs), interrupted])
      if (sessions.has(target.url, startMs))
        return inSession(target, request, sessions, startMs, runtime, deadline, timeoutMs)
      const budget = new RequestBudget(STATELESS_REQUESTS)
      const fetch = guardedFetch(config.probes, runtime, budget)
      try {
        const found = await discover(fetch, target.url, PROBE_CLIENT, deadline)
        if (found.generation !== "2026-07-28")
          return inSession(target, request, sessions, startMs, runtime, deadline, timeoutMs)
        budget.grant(STATELESS_REQUESTS)
        return Either.right(readToolAnswer(await statelessRequest(fetch, target.url, request, PROBE_CLIENT, deadline)))
      } catch (error) {
        if (isTaggedAs<McpAnswerError>(error, "McpAnswerError")) return answeredNoChallenge(error)
        return Either.left(failureOf(error, deadline, timeoutMs))
      }
    })
    const endMs = yield* Clock.currentTimeMillis
    const latencyMs = Math.max(0, Math.round(endMs - startMs))
    const deployment = { network: config.network, assetContract: config.asset.assetContract }
    if (Either.isLeft(outcome)) {
      return {
        observation: { ...failureObservation(target, startMs, outcome.left), method: request.method },
        challenge: null,
        options: []
      } satisfies Observed
    }
    const answer = outcome.right
    switch (answer._tag) {
      case "Executed":
        return {
          observation: {
            ...blank(target, startMs),
            method: request.method,
            latencyMs,
            outcome: "executed_unpaid",
            detail: `the ${kind} was served without asking for payment`
          },
          challenge: null,
          options: []
        } satisfies Observed
      case "NoChallenge":
        return {
          observation: {
            ...blank(target, startMs),
            method: request.method,
            latencyMs,
            outcome: "no_challenge",
            detail: answer.reason
          },
          challenge: null,
          options: []
        } satisfies Observed
      case "PaymentRequired": {
        // The HTTP rules read a 402 whose challenge is the MCP answer's PaymentRequired.
        const observed = observationOf(
          target,
          startMs,
          endMs,
          Either.right({ url: target.url, httpStatus: 402, ...asHttpChallenge(answer.paymentRequired), note: null }),
          deployment,
          config.asset.decimals,
          config.probes.priceTolerance,
          // The answer's body was capped when read; this header is only its re-encoding.
          Number.POSITIVE_INFINITY
        )
        const labelled = {
          ...observed,
          observation: { ...observed.observation, method: `${request.method} ${answer.binding}`, httpStatus: null }
        } satisfies Observed
        const challenge = observed.challenge
        if (challenge === null) return labelled
        // Judged as an HTTP challenge's are, but the resource is the tool, not a URL it could name.
        const verdict = yield* Effect.promise(() => judgeOffers(challenge, { nowMs: endMs, probedUrl: null }))
        return withOfferVerdict(labelled, verdict)
      }
    }
  })

/**
 * The tools an MCP server lists (registration), in the generation `server/discover` tells: a
 * 2026-07-28 server's first page of `tools/list` asked statelessly; a 2025-era server's in one
 * session through the guarded fetch, closed after. Fails with the probe's failure, as a probe
 * would observe it.
 */
export const listMcpTools = (url: string, probes: OutboundRequests) =>
  Effect.gen(function* () {
    const runtime = yield* Effect.runtime<never>()
    return yield* Effect.tryPromise({
      try: async (
        interrupted
      ): Promise<
        ReadonlyArray<{
          readonly name: string
          readonly description?: string | undefined
          readonly inputSchema?: unknown
        }>
      > => {
        const deadline = AbortSignal.any([AbortSignal.timeout(probes.timeoutMs), interrupted])
        const budget = new RequestBudget(STATELESS_REQUESTS)
        const fetch = guardedFetch(probes, runtime, budget)
        const found = await discover(fetch, url, "sextant-registration", deadline)
        if (found.generation === "2026-07-28") {
          budget.grant(STATELESS_REQUESTS)
          const listed = await statelessRequest(
            fetch,
            url,
            { method: "tools/list", params: {} },
            "sextant-registration",
            deadline
          )
          const tools = Array.isArray(listed.tools) ? listed.tools : []
          return tools.flatMap((t) =>
            typeof t === "object" && t !== null && typeof t.name === "string"
              ? [
                  {
                    name: t.name,
                    description: typeof t.description === "string" ? t.description : undefined,
                    inputSchema: t.inputSchema
                  }
                ]
              : []
          )
        }
        budget.grant(HANDSHAKE_REQUESTS + CALL_REQUESTS)
        const client = new Client({ name: "sextant-registration", version: pkg.version })
        try {
          await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch }), {
            signal: deadline,
            timeout: probes.timeoutMs
          })
          return (await client.listTools(undefined, { signal: deadline, timeout: probes.timeoutMs })).tools
        } finally {
          await client.close().catch(() => undefined)
        }
      },
      catch: (error) => failureOf(error, AbortSignal.timeout(probes.timeoutMs), probes.timeoutMs)
    })
  })
