import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import type { RouteDecision, RouteRequest } from "../domain/routes.js"
import { policyContext } from "../policy/evaluate.js"
import { EvidenceReader } from "../verification/EvidenceReader.js"
import { decideRoute } from "./rank.js"

export interface RouterShape {
  readonly route: (request: RouteRequest) => Effect.Effect<RouteDecision>
}

/** Chooses a provider for a capability under a buyer policy; the same inputs give the same answer. */
export class Router extends Context.Tag("sextant/Router")<Router, RouterShape>() {
  static readonly Live = Layer.effect(
    Router,
    Effect.suspend(() => make)
  )
}

const make = Effect.gen(function* () {
  const reader = yield* EvidenceReader
  const config = yield* AppConfig
  const route = (request: RouteRequest) =>
    Effect.gen(function* () {
      // The candidates and their maintained metrics rows from the capability index, held in
      // memory between reads of the store: routing never scans observations nor the whole catalog.
      const { candidates, readAtMs } = yield* reader.forCapability(request.capability)
      const now = new Date(yield* Clock.currentTimeMillis)
      return decideRoute({
        request,
        catalog: candidates.map((c) => c.record),
        evidence: new Map(candidates.map((c) => [c.record.resource.id, c.evidence])),
        context: policyContext(config, now),
        metricsSnapshotAt: new Date(readAtMs).toISOString()
      })
    }).pipe(Effect.withSpan("Router.route"))

  return Router.of({ route })
})
