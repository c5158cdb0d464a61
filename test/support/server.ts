import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest, HttpServer } from "@effect/platform"
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { ServicesLive } from "../../src/app.js"
import { type Config, loadConfig } from "../../src/config.js"
import { SextantApi } from "../../src/contract/index.js"
import { BunServerLive, HttpLive } from "../../src/http/server.js"
import { TelemetryLive } from "../../src/telemetry/Telemetry.js"
import { LOOPBACK, pollUntil } from "./poll.js"

/**
 * Where a test's ledger reads go unless it starts a fixture ledger: a closed loopback port, so a
 * stray read fails at once and no default public endpoint is ever used.
 */
export const NO_LEDGER = "http://127.0.0.1:9"

/** The embedded defaults, on an in-memory store, port 0, no facilitator, with nothing started in the background. */
export const testConfig = (overrides: Partial<Config> = {}): Config => {
  const base = Either.getOrThrow(loadConfig(undefined, {}))
  return {
    ...base,
    host: "127.0.0.1",
    port: 0,
    database: ":memory:",
    vertical: { ...base.vertical, enabled: false },
    // A day's interval keeps the schedule out of the way; tests validate a resource as often as they need (the allowance has its own tests).
    probes: { ...base.probes, intervalSeconds: 86_400, validationsPerInterval: 1_000 },
    ledger: { ...base.ledger, sorobanRpcUrl: NO_LEDGER, horizonUrl: NO_LEDGER, pollIntervalSeconds: 0.2 },
    // No backend unless a test names one: the bundled embedded facilitator would make a key file.
    facilitators: [],
    ...overrides
  }
}

/** The ledger block of a test config reading `ledger` (a fixture from test/fixtures/ledger.ts). */
export const ledgerAt = (
  ledger: { readonly rpcUrl: string; readonly horizonUrl: string },
  confirmTimeoutSeconds = 10
) => ({
  ...testConfig().ledger,
  sorobanRpcUrl: ledger.rpcUrl,
  horizonUrl: ledger.horizonUrl,
  confirmTimeoutSeconds
})

/**
 * Starts the real HTTP service (same layers as `sextant serve`, with ledger confirmation and
 * reconciliation running; probes run only on request) on 127.0.0.1 and an ephemeral port.
 */
export const startServer = async (config: Config = testConfig()) => {
  // The services stay in the runtime, so a test can seed history through them (`runtime.runPromise`).
  const layer = HttpLive.pipe(
    Layer.provideMerge(ServicesLive(config, "server")),
    Layer.provideMerge(BunServerLive({ host: "127.0.0.1", port: 0 })),
    Layer.provide(TelemetryLive(config, "test"))
  )
  const runtime = ManagedRuntime.make(layer)
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const address = server.address
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const url = `http://127.0.0.1:${address.port}`
  return { url, runtime, client: await typedClient(url), close: () => runtime.dispose() }
}

/**
 * The typed client of the contract for the service at `url`, sending `headers` (an API key) with
 * every call: the compiler checks each request and the answer is decoded, a refusal as its error
 * class (`{error, message}` and the status the contract gives it).
 */
export const typedClient = (url: string, headers: Record<string, string> = {}) =>
  Effect.runPromise(
    HttpApiClient.make(SextantApi, {
      baseUrl: url,
      transformClient: HttpClient.mapRequest(HttpClientRequest.setHeaders(headers))
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
export type TypedClient = Awaited<ReturnType<typeof typedClient>>

/** Runs a typed call that must be refused: the error it decoded to. */
export const refusal = <A, E>(call: Effect.Effect<A, E>): Promise<E> => Effect.runPromise(Effect.flip(call))

/** A raw JSON request, for the cases the typed client cannot express (bad bodies, wrong methods). */
export const request = async (url: string, init: RequestInit & { json?: unknown } = {}) => {
  const { json, ...rest } = init
  const response = await fetch(url, {
    ...rest,
    ...(json !== undefined
      ? { body: JSON.stringify(json), headers: { "content-type": "application/json", ...(rest.headers ?? {}) } }
      : {})
  })
  const text = await response.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text, tests assert on it
  }
  return { status: response.status, headers: response.headers, body: body as any }
}

/**
 * Waits until the service at `url` lists a payment kind on `/x402/supported`: its facilitator
 * pool's first poll has landed, so verify and settle no longer answer 503 FACILITATORS_NOT_READY.
 */
export const facilitatorsAnswered = (url: string, headers: Record<string, string> = {}) =>
  pollUntil(
    "the service's first /supported poll lands",
    async () => (await request(`${url}/x402/supported`, { headers })).body.kinds?.length ?? 0,
    (kinds) => kinds > 0,
    LOOPBACK
  )
