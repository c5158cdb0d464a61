import { Cause, Duration, Effect, Layer, Option } from "effect"
import pkg from "../../package.json" with { type: "json" }
import { ServicesLive } from "../app.js"
import { ImportSchedulerLive } from "../catalog/ImportScheduler.js"
import { AppConfig, type Config, type ConfigError } from "../config.js"
import { DemoProviders } from "../demo/DemoProviders.js"
import { isTaggedAs } from "../domain/tagged.js"
import { EconomicProber } from "../economic/EconomicProber.js"
import { openModeRefusal } from "../http/openMode.js"
import { BunServerLive, HttpLive } from "../http/server.js"
import { Lifecycle } from "../lifecycle/Lifecycle.js"
import { processLogger, TelemetryLive } from "../telemetry/Telemetry.js"
import { ProbeSchedulerLive } from "../verification/ProbeScheduler.js"
import { VerticalServer } from "../vertical/VerticalServer.js"
import { CliExit, EXIT, forceExit } from "./exit.js"

/**
 * The graceful part of a shutdown. Its finalizer runs once the schedules above it have stopped and
 * before the listeners below it close: readiness turns 503, new requests are turned away, and the
 * requests and settles in flight get up to `shutdownGraceSeconds` to be answered and journaled.
 * If the grace runs out the process exits at once, leaving the journal as a crash would (the next
 * start's recovery handles it, as after a crash).
 */
const GracefulShutdown = Layer.scopedDiscard(
  Effect.gen(function* () {
    const lifecycle = yield* Lifecycle
    const { shutdownGraceSeconds } = yield* AppConfig
    yield* Effect.addFinalizer(() =>
      lifecycle
        .drain(Duration.seconds(shutdownGraceSeconds))
        .pipe(Effect.flatMap((finished) => (finished ? Effect.void : Effect.sync(forceExit))))
    )
  })
)

/**
 * A second SIGTERM / SIGINT while the first one's shutdown drains exits at once. (The runtime
 * turns the first signal into an interruption of the main fiber, which starts the drain.)
 */
const exitOnSecondSignal = Effect.sync(() => {
  let signals = 0
  const onSignal = () => {
    signals += 1
    if (signals < 2) return
    process.stderr.write("second signal: exiting without waiting for requests in flight\n")
    forceExit()
  }
  process.on("SIGTERM", onSignal)
  process.on("SIGINT", onSignal)
})

/**
 * The service, the reference vertical beside it unless `vertical.enabled` is false, the demo
 * providers when `demo.enabled`, and the probe schedules, the import schedule and economic probes
 * when enabled, started once the listeners listen so the first cycle already finds them up.
 * Layers close in reverse: on a signal the schedules stop first, then the graceful drain runs,
 * then the listeners and the services close.
 */
const launch = (config: Config) => {
  const services = ServicesLive(config, "server")
  const http = HttpLive.pipe(Layer.provide(BunServerLive(config)))
  const listeners = Layer.merge(
    config.vertical.enabled ? Layer.merge(http, VerticalServer.layer(config)) : http,
    DemoProviders.layer(config)
  )
  const drained = GracefulShutdown.pipe(Layer.provideMerge(listeners))
  const schedules = Layer.mergeAll(ProbeSchedulerLive, ImportSchedulerLive, EconomicProber.schedule)
  return Layer.launch(
    schedules.pipe(Layer.provide(drained), Layer.provide(services), Layer.provide(TelemetryLive(config, pkg.version)))
  )
}

/**
 * `sextant serve`. A failure to start is logged through the process's redacting logger, in the
 * configured format (`logFormat`); a config error (a catalog file is decoded once the store is
 * open) keeps its one line.
 */
export const serve = (config: Config) =>
  Effect.gen(function* () {
    const exposed = openModeRefusal(config)
    if (exposed !== undefined) return yield* Effect.fail(exposed)
    yield* exitOnSecondSignal
    return yield* launch(config).pipe(
      Effect.catchAllCause((cause) => {
        const failure = Cause.failureOption(cause)
        if (Option.isSome(failure) && isTaggedAs<ConfigError>(failure.value, "ConfigError"))
          return Effect.fail(failure.value)
        if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
        return Effect.logError(cause).pipe(Effect.zipRight(Effect.fail(new CliExit({ code: EXIT.failed }))))
      }),
      Effect.provide(processLogger(config))
    )
  })
