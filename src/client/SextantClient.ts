import { FetchHttpClient, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Effect, Layer } from "effect"
import { SextantApi } from "../contract/index.js"

export interface SextantClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:4020`. */
  readonly baseUrl: string
  /** Sent as `Authorization: Bearer` to this service only (needed for `POST /v1/receipts` when it has `apiKeys`). */
  readonly apiKey?: string
}

/**
 * The typed client of every endpoint, derived from the HttpApi definition (`SextantApi`): the same
 * schemas encode requests and decode answers, and each endpoint's error answers arrive as its own
 * error classes (`NotFound`, `NoEligibleProvider`, ...), so it cannot drift from the server.
 */
export const makeSextantClient = (options: SextantClientOptions) =>
  HttpApiClient.make(SextantApi, {
    baseUrl: options.baseUrl,
    transformClient: (client) => {
      const apiKey = options.apiKey
      return apiKey === undefined ? client : HttpClient.mapRequest(client, HttpClientRequest.bearerToken(apiKey))
    }
  })

/**
 * Derived, not written out: the surface is the contract (`src/contract/`), one method per endpoint,
 * and a copy of it here could drift from what the server answers.
 */
export type SextantClientShape = Effect.Effect.Success<ReturnType<typeof makeSextantClient>>

/** A handler of web requests: the service's own API served in-process (`localApiHandler`). */
export type WebHandler = (request: Request) => Promise<Response>

export class SextantClient extends Context.Tag("sextant/SextantClient")<SextantClient, SextantClientShape>() {
  /** The client of a service over HTTP. */
  static readonly layer = (options: SextantClientOptions) =>
    Layer.effect(SextantClient, makeSextantClient(options)).pipe(Layer.provide(FetchHttpClient.layer))

  /**
   * The client of the API answered in-process by `handle`, with no socket: how the MCP server's
   * buyer tool reaches the handlers its other tools call. The fetch it uses is replaced per request,
   * since the fetch client reads it from the requesting fiber.
   */
  static readonly inProcess = (handle: WebHandler) =>
    Layer.effect(SextantClient, makeSextantClient({ baseUrl: "http://sextant.local" })).pipe(
      Layer.provide(
        Layer.effect(
          HttpClient.HttpClient,
          Effect.map(HttpClient.HttpClient, (client) =>
            HttpClient.transform(client, (effect) =>
              Effect.provideService(effect, FetchHttpClient.Fetch, inProcessFetch(handle))
            )
          )
        )
      ),
      Layer.provide(FetchHttpClient.layer)
    )
}

const inProcessFetch = (handle: WebHandler) =>
  ((input: RequestInfo | URL, init?: RequestInit) => handle(new Request(input, init))) as typeof fetch
