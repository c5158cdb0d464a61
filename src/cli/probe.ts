import { Console, Effect, Option } from "effect"
import { ServicesLive } from "../app.js"
import type { Config } from "../config.js"
import type { ResourceId } from "../domain/ids.js"
import { Prober } from "../verification/Prober.js"
import { CliExit, EXIT } from "./exit.js"
import { stderrLogs } from "./logs.js"

/**
 * `sextant probe [resource-id]`: one probe pass, a single resource or the whole catalog (one
 * cycle, with pruning), printed as JSON. Exit 1 when the named resource is not healthy, 2 when it
 * is unknown.
 */
export const probe = (config: Config, resourceId: Option.Option<ResourceId>) =>
  Effect.gen(function* () {
    const prober = yield* Prober
    if (Option.isNone(resourceId)) return yield* Console.log(JSON.stringify(yield* prober.runCycle))
    const result = yield* prober.probeResource(resourceId.value)
    yield* Console.log(JSON.stringify(result))
    if (!result.healthy) return yield* new CliExit({ code: EXIT.failed })
  }).pipe(
    Effect.catchTag("NotFound", (e) => new CliExit({ code: EXIT.usage, message: e.message })),
    Effect.provide(ServicesLive(config)),
    Effect.provide(stderrLogs(config))
  )
