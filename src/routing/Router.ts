import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { RouteDecision, RouteRequest } from "../domain/routes.js"
import { policyContext } from "../policy/evaluate.js"
import { ResourcesRepo } from "../store/ResourcesRepo.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { decideRoute } from "./rank.js"

const make = Effect.gen(function* () {
  const repo = yield* ResourcesRepo
  const reader = yield* EvidenceReader
  const config = yield* AppConfig
  const route = (request: RouteRequest) =>
    Effect.gen(function* () {
      const catalog = yield* repo.byCapability(request.capability)
      // Maintained metrics rows, read in one call: routing never scans observations.
      const evidence = yield* reader.forResources(catalog.map((r) => r.resource.id))
      const readAt = new Date(yield* Clock.currentTimeMillis)
      return decideRoute({
        request,
        catalog,
        evidence,
        context: policyContext(config, readAt),
        metricsSnapshotAt: readAt.toISOString()
      })
    }).pipe(Effect.withSpan("Router.route"))

  return Router.of({ route })
})

/** Chooses a provider for a capability under a buyer policy; the same inputs give the same answer. */
export class Router extends Context.Tag("sextant/Router")<
  Router,
  { readonly route: (request: RouteRequest) => Effect.Effect<RouteDecision> }
>() {
  static readonly Live = Layer.effect(Router, make)
}
