import { Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../config.js"
import { Importer } from "./Importer.js"

/**
 * Pulls each configured catalog source at start-up and then `intervalSeconds` after the previous
 * pull ended, each in a fiber owned by the layer's scope (closing it interrupts a pull in flight).
 * A failed pull is logged, changes nothing, and the schedule goes on.
 */
export const ImportSchedulerLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const importer = yield* Importer
    const { catalogSources } = yield* AppConfig
    for (const source of catalogSources) {
      const pull = importer.pull({ id: source.id, location: source.url, networks: source.networks }).pipe(
        Effect.tap((summary) => Effect.logInfo("catalog import done", summary)),
        Effect.catchAllCause((cause) => Effect.logWarning(`catalog import from ${source.id} failed`, cause))
      )
      yield* Effect.forkScoped(Effect.repeat(pull, Schedule.spaced(Duration.seconds(source.intervalSeconds))))
    }
  })
)
