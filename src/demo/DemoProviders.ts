import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Context, Duration, Effect, Layer, Ref } from "effect"
import {
  bundledCatalog,
  type Config,
  DEMO_BEHAVIOURS,
  type DemoBehaviour,
  demoOrigin,
  demoProviderId
} from "../config.js"
import type { KeyFileError } from "../keys/keyFileError.js"
import { demoOfferKey } from "../vertical/offerKey.js"
import type { VerticalHttpApp } from "../vertical/VerticalApp.js"
import { VerticalServer, verticalLayer } from "../vertical/VerticalServer.js"
import { answerFor, priceFactorAt, type Seller, scaleOffers, sellerFrom } from "./behaviour.js"

export interface DemoProvider {
  readonly behaviour: DemoBehaviour
  /** Its provider id in the catalog, also its path segment: `demo-<behaviour>`. */
  readonly id: string
  readonly origin: string
  /** Base of its four endpoints: `<origin>/<id>/v1/rwa`. */
  readonly baseUrl: string
}

export interface DemoProvidersShape {
  /** The providers this process runs; none when `demo.enabled` is false. */
  readonly providers: ReadonlyArray<DemoProvider>
}

/**
 * The demo x402 providers `serve` starts beside the reference vertical when `demo.enabled`: one
 * per behaviour (fast, slow, flaky, raiser), each a copy of the vertical's app on its own loopback
 * port with real challenges, so a first run has providers to choose between. Closing the scope
 * stops them.
 */
export class DemoProviders extends Context.Tag("sextant/demo/DemoProviders")<DemoProviders, DemoProvidersShape>() {
  static readonly layer = (config: Config): Layer.Layer<DemoProviders, KeyFileError> =>
    Layer.scoped(DemoProviders, start(config))
}

/**
 * The behaviour around the vertical's app: a count per path (so each resource sees the failing
 * share, whoever else calls), then a failure or a delay before the app answers.
 */
const withBehaviour =
  (behaviour: DemoBehaviour, config: Config, id: string, counts: Ref.Ref<ReadonlyMap<string, number>>) =>
  (app: VerticalHttpApp): VerticalHttpApp =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const path = new URL(request.url, "http://localhost").pathname
      const n = yield* Ref.modify(counts, (m) => {
        const seen = m.get(path) ?? 0
        return [seen, new Map(m).set(path, seen + 1)] as const
      })
      const answer = answerFor(behaviour, n, config.demo)
      if (answer._tag === "Fail") {
        return HttpServerResponse.unsafeJson(
          {
            error: "INTERNAL",
            message: `${id} fails a share of its requests on purpose (demo.flakyFailureShare); nothing was charged`
          },
          { status: 500 }
        )
      }
      if (answer.delayMs > 0) yield* Effect.sleep(Duration.millis(answer.delayMs))
      return yield* app
    })

/** One provider: the vertical's app under its id, selling what the catalog lists for it, in its behaviour. */
const startProvider = (config: Config, behaviour: DemoBehaviour, seller: Seller) =>
  Effect.gen(function* () {
    const id = demoProviderId(behaviour)
    const startedAt = yield* Clock.currentTimeMillis
    const counts = yield* Ref.make<ReadonlyMap<string, number>>(new Map())
    const offers = Effect.map(Clock.currentTimeMillis, (now) =>
      scaleOffers(seller.offers, priceFactorAt(behaviour, now - startedAt, config.demo))
    )
    const context = yield* Layer.build(
      verticalLayer(config, {
        name: id,
        host: config.demo.host,
        port: config.demo.ports[behaviour],
        publicUrl: null,
        payTo: seller.payTo,
        offers,
        offerKey: demoOfferKey(config, id),
        around: withBehaviour(behaviour, config, id, counts)
      })
    )
    const server = Context.get(context, VerticalServer)
    return { behaviour, id, origin: demoOrigin(config.demo, behaviour), baseUrl: server.baseUrl }
  })

const start = (config: Config) =>
  Effect.gen(function* () {
    if (!config.demo.enabled) return { providers: [] }
    const catalog = yield* Effect.orDie(Effect.mapError(bundledCatalog(config), (e) => new Error(e.line)))
    const providers = yield* Effect.forEach(DEMO_BEHAVIOURS, (behaviour) => {
      const seller = sellerFrom(catalog, demoProviderId(behaviour))
      return seller === undefined
        ? Effect.dieMessage(`the bundled demo catalog lists nothing for ${demoProviderId(behaviour)}`)
        : startProvider(config, behaviour, seller)
    })
    yield* Effect.logInfo(`demo: ${providers.map((p) => `${p.id} (${p.behaviour}) on ${p.origin}`).join(", ")}`)
    return { providers }
  })
