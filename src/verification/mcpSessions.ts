import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Runtime } from "effect"
import pkg from "../../package.json" with { type: "json" }
import type { Config } from "../config.js"
import { guardedFetch } from "../outbound/mcpFetch.js"
import { CALL_REQUESTS, HANDSHAKE_REQUESTS, RequestBudget } from "../outbound/mcpWire.js"
import { CLIENT_CAPABILITIES } from "../x402/mcpStateless.js"

/** Open MCP sessions one process keeps at most; the least recently used is closed first. */
export const MAX_MCP_SESSIONS = 64
/** A session unused this long is closed (or after one probe interval, when that is shorter). */
export const MCP_SESSION_IDLE_MS = 60_000

export interface McpSession {
  readonly ready: Promise<Client>
  /** Marks one call in the session, granting its requests; `done` when it settled. */
  readonly begin: () => { readonly done: () => void }
}

interface Entry extends McpSession {
  readonly openedAtMs: number
  lastUsedMs: number
  inFlight: number
  retired: boolean
}

/**
 * MCP sessions of the probes of one process, one per server URL: the tools of one server share a
 * session (one `initialize`) for at most `probes.intervalSeconds`, after which the next probe opens
 * a new one, so a server that restarted is met again within an interval. Bounded: a session idle
 * for MCP_SESSION_IDLE_MS is closed, and at most MAX_MCP_SESSIONS are open (least recently used
 * closed first), so memory does not grow with the number of MCP servers ever probed. A session
 * that failed is retired: the next probe opens another, and it is closed once the calls still in it
 * have settled, so one failing tool never ends another tool's call.
 */
export const mcpSessions = (config: Config) => {
  const open = new Map<string, Entry>()
  const intervalMs = config.probes.intervalSeconds * 1000
  const idleMs = Math.min(intervalMs, MCP_SESSION_IDLE_MS)

  const closeWhenIdle = (entry: Entry) => {
    if (entry.retired && entry.inFlight === 0) void entry.ready.then((client) => client.close()).catch(() => undefined)
  }

  const retire = (url: string, entry: Entry) => {
    if (open.get(url) === entry) open.delete(url)
    if (entry.retired) return
    entry.retired = true
    closeWhenIdle(entry)
  }

  /** Closes the sessions idle too long, and the least recently used beyond the cap. */
  const sweep = (nowMs: number) => {
    for (const [url, entry] of open) {
      if (entry.inFlight === 0 && nowMs - entry.lastUsedMs >= idleMs) retire(url, entry)
    }
    for (const [url, entry] of open) {
      if (open.size < MAX_MCP_SESSIONS) break
      retire(url, entry)
    }
  }

  const connect = async (url: string, budget: RequestBudget, runtime: Runtime.Runtime<never>, signal: AbortSignal) => {
    const client = new Client({ name: "sextant-probe", version: pkg.version }, { capabilities: CLIENT_CAPABILITIES })
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      fetch: guardedFetch(config.probes, runtime, budget)
    })
    await client.connect(transport, { signal, timeout: config.probes.timeoutMs })
    return client
  }

  const opened = (url: string, nowMs: number, runtime: Runtime.Runtime<never>, signal: AbortSignal): Entry => {
    const budget = new RequestBudget(HANDSHAKE_REQUESTS)
    const entry: Entry = {
      ready: connect(url, budget, runtime, signal),
      openedAtMs: nowMs,
      lastUsedMs: nowMs,
      inFlight: 0,
      retired: false,
      begin: () => {
        budget.grant(CALL_REQUESTS)
        entry.inFlight++
        let settled = false
        return {
          done: () => {
            if (settled) return
            settled = true
            entry.inFlight--
            closeWhenIdle(entry)
          }
        }
      }
    }
    entry.ready.catch(() => retire(url, entry))
    return entry
  }

  return {
    /** The live session with the server at `url`, opened now if there is none within its interval. */
    session: (url: string, nowMs: number, runtime: Runtime.Runtime<never>, signal: AbortSignal): McpSession => {
      const known = open.get(url)
      if (known !== undefined && nowMs - known.openedAtMs < intervalMs) {
        // Most recently used last: the sweep closes from the front.
        open.delete(url)
        open.set(url, known)
        known.lastUsedMs = nowMs
        return known
      }
      if (known !== undefined) retire(url, known)
      sweep(nowMs)
      const entry = opened(url, nowMs, runtime, signal)
      open.set(url, entry)
      return entry
    },
    /** Whether a session with `url` is open within its interval: the server is known to speak 2025-era MCP. */
    has: (url: string, nowMs: number) => {
      const known = open.get(url)
      return known !== undefined && !known.retired && nowMs - known.openedAtMs < intervalMs
    },
    /** The session is not used again; it is closed once its calls in flight settle. */
    forget: (url: string, session: McpSession) => retire(url, session as Entry),
    /** Open sessions (for the bound's test). */
    size: () => open.size,
    closeAll: async () => {
      for (const [url, entry] of [...open]) retire(url, entry)
    }
  }
}

export type McpSessions = ReturnType<typeof mcpSessions>
