import type { KeyObject } from "node:crypto"
import { HttpServer } from "@effect/platform"
import { BunHttpServer } from "@effect/platform-bun"
import { Context, Effect, Layer } from "effect"
import { type Config, reachableHost, verticalEndpoints } from "../config.js"
import { networkPassphrase } from "../domain/stellar.js"
import type { KeyFileError } from "../keys/keyFileError.js"
import { facilitatorUrlFor } from "../outbound/endpoints.js"
import { loadOfferKey, type OfferKeyFile, verticalOfferKey } from "./offerKey.js"
import { exactOffers, type Offers, type PaymentsStatus, Paywall } from "./Paywall.js"
import { StellarData } from "./StellarData.js"
import { type VerticalHttpApp, verticalApp } from "./VerticalApp.js"

export interface VerticalServerShape {
  /** Origin the vertical is reached at, e.g. http://127.0.0.1:4021. */
  readonly origin: string
  /** Base of the four endpoints: `<origin>/<name>/v1/rwa`. */
  readonly baseUrl: string
  readonly payments: Effect.Effect<PaymentsStatus>
}

/** The paid reference vertical on `vertical.host` / `vertical.port`, selling `vertical.prices` as `exact`. */
export class VerticalServer extends Context.Tag("sextant/vertical/VerticalServer")<
  VerticalServer,
  VerticalServerShape
>() {
  static readonly layer = (config: Config): Layer.Layer<VerticalServer, KeyFileError> =>
    verticalLayer(config, {
      name: config.vertical.name,
      host: config.vertical.host,
      port: config.vertical.port,
      publicUrl: config.vertical.publicUrl,
      payTo: config.vertical.payTo,
      offers: Effect.succeed(exactOffers(config.vertical.prices)),
      offerKey: verticalOfferKey(config)
    })
}

/**
 * Seconds a connection may sit without data. A paid request waits on verify, the upstream reads
 * and settle in turn; Bun's default of 10 s would cut a slow settlement off half way, after the
 * buyer has paid. 255 is Bun's maximum.
 */
const IDLE_TIMEOUT_SECONDS = 255

/**
 * One running copy of the vertical's app: the reference vertical itself, or a demo provider
 * (src/demo/) that sells the same endpoints under its own name, payee, prices and behaviour.
 */
export interface VerticalInstance {
  /** The `<name>` path segment: endpoints live under `/<name>/v1/rwa/`. */
  readonly name: string
  readonly host: string
  readonly port: number
  /** Origin buyers reach it at; null is http://<host>:<bound port>. */
  readonly publicUrl: string | null
  readonly payTo: string
  readonly offers: Effect.Effect<Offers>
  /** The key file its offers and receipts are signed with: the same signer across restarts. */
  readonly offerKey: OfferKeyFile
  /** Wraps the app, e.g. in a demo provider's behaviour; the reference vertical answers as it is. */
  readonly around?: (app: VerticalHttpApp) => VerticalHttpApp
}

const serve = (config: Config, instance: VerticalInstance) =>
  Effect.gen(function* () {
    const server = yield* HttpServer.HttpServer
    const address = server.address
    const origin =
      instance.publicUrl ??
      (address._tag === "TcpAddress" ? `http://${reachableHost(address.hostname)}:${address.port}` : "http://localhost")
    const settings = {
      name: instance.name,
      origin,
      intel: {
        network: config.network,
        networkPassphrase: networkPassphrase(config.network),
        largeTransferShare: config.vertical.largeTransferShare
      }
    }
    const app = verticalApp(settings)
    yield* server.serve(instance.around ? instance.around(app) : app)
    const baseUrl = `${origin}/${instance.name}/v1/rwa`
    yield* Effect.logInfo(`vertical: ${instance.name} serving ${baseUrl}/{inspect,changes,compliance,eligibility}`)
    const paywall = yield* Paywall
    return { origin, baseUrl, payments: paywall.status }
  })

/**
 * One copy of the vertical as a scoped layer: its own HTTP server on the instance's host and
 * port, the x402 paywall toward `facilitatorUrlFor(config)` (initialised in the background, so
 * the server answers 402 at once) and Horizon / Soroban RPC clients, all as `vertical` configures
 * them, signing with the instance's key file (read, or created on first start). Closing the scope
 * stops the server and the retry loop.
 */
export const verticalLayer = (config: Config, instance: VerticalInstance): Layer.Layer<VerticalServer, KeyFileError> =>
  Layer.unwrapEffect(
    Effect.map(loadOfferKey(instance.offerKey), (signingKey) => servedWith(config, instance, signingKey))
  )

const servedWith = (config: Config, instance: VerticalInstance, signingKey: KeyObject) =>
  Layer.scoped(VerticalServer, serve(config, instance)).pipe(
    Layer.provide(
      BunHttpServer.layer({ hostname: instance.host, port: instance.port, idleTimeout: IDLE_TIMEOUT_SECONDS })
    ),
    Layer.provide(
      Paywall.Live({
        network: config.network,
        asset: config.asset.assetContract,
        payTo: instance.payTo,
        offers: instance.offers,
        facilitatorUrl: facilitatorUrlFor(config),
        facilitatorApiKey: config.vertical.facilitatorApiKey,
        timeoutMs: config.vertical.facilitatorTimeoutMs,
        signingKey
      })
    ),
    Layer.provide(
      StellarData.Live({
        ...verticalEndpoints(config),
        networkPassphrase: networkPassphrase(config.network),
        timeoutMs: config.vertical.upstreamTimeoutMs,
        allowPrivateHomeDomains: config.vertical.allowPrivateHomeDomains
      })
    )
  )
