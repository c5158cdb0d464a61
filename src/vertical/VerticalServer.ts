import { HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { getNetworkPassphrase } from "@x402/stellar"
import { Context, Effect, Layer } from "effect"
import { type Config, reachableHost, verticalEndpoints } from "../config.js"
import { Paywall, type PaymentsStatus } from "./Paywall.js"
import { StellarData } from "./StellarData.js"
import { verticalApp } from "./VerticalApp.js"

export interface VerticalServerApi {
  /** Origin the vertical is reached at, e.g. http://127.0.0.1:4021. */
  readonly origin: string
  /** Base of the four endpoints: `<origin>/<name>/v1/rwa`. */
  readonly baseUrl: string
  readonly payments: Effect.Effect<PaymentsStatus>
}

/**
 * Seconds a connection may sit without data. A paid request waits on verify, the upstream reads
 * and settle in turn; Bun's default of 10 s would cut a slow settlement off half way, after the
 * buyer has paid. 255 is Bun's maximum.
 */
const IDLE_TIMEOUT_SECONDS = 255

/** Null in config means this service's own facilitator endpoints, on the service's host and port. */
export const facilitatorUrlFor = (config: Pick<Config, "host" | "port" | "vertical">): string =>
  config.vertical.facilitatorUrl ?? `http://${reachableHost(config.host)}:${config.port}/x402`

const serve = (config: Config) =>
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const address = server.address
    const origin =
      config.vertical.publicUrl ??
      (address._tag === "TcpAddress" ? `http://${reachableHost(address.hostname)}:${address.port}` : "http://localhost")
    const settings = {
      name: config.vertical.name,
      origin,
      prices: config.vertical.prices,
      intel: {
        network: config.network,
        networkPassphrase: getNetworkPassphrase(config.network),
        largeTransferShare: config.vertical.largeTransferShare
      }
    }
    yield* server.serve(verticalApp(settings))
    const baseUrl = `${origin}/${config.vertical.name}/v1/rwa`
    yield* Effect.logInfo(`vertical: ${config.vertical.name} serving ${baseUrl}/{inspect,changes,compliance,eligibility}`)
    const paywall = yield* Paywall
    return { origin, baseUrl, payments: paywall.status }
  })

/**
 * The paid reference vertical as one scoped layer: its own HTTP server on `vertical.host` /
 * `vertical.port`, the x402 paywall toward `facilitatorUrlFor(config)` (initialised in the
 * background, so the server answers 402 at once) and Horizon / Soroban RPC clients. Closing
 * the scope stops the server and the retry loop.
 */
export class VerticalServer extends Context.Tag("sextant/vertical/VerticalServer")<VerticalServer, VerticalServerApi>() {
  static readonly layer = (config: Config): Layer.Layer<VerticalServer> =>
    Layer.scoped(VerticalServer, serve(config)).pipe(
      Layer.provide(BunHttpServer.layer({ hostname: config.vertical.host, port: config.vertical.port, idleTimeout: IDLE_TIMEOUT_SECONDS })),
      Layer.provide(
        Paywall.Live({
          network: config.network,
          asset: config.asset.assetContract,
          payTo: config.vertical.payTo,
          prices: config.vertical.prices,
          facilitatorUrl: facilitatorUrlFor(config),
          facilitatorApiKey: config.vertical.facilitatorApiKey,
          timeoutMs: config.vertical.facilitatorTimeoutMs
        })
      ),
      Layer.provide(
        StellarData.Live({
          ...verticalEndpoints(config),
          networkPassphrase: getNetworkPassphrase(config.network),
          timeoutMs: config.vertical.upstreamTimeoutMs,
          allowPrivateHomeDomains: config.vertical.allowPrivateHomeDomains
        })
      )
    )
}
