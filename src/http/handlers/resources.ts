import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Discovery } from "../../discovery/Discovery.js"

export const ResourcesHandlers = HttpApiBuilder.group(SextantApi, "resources", (handlers) =>
  Effect.gen(function* () {
    const discovery = yield* Discovery
    return handlers
      .handle("list", ({ urlParams }) => discovery.list(urlParams))
      .handle("get", ({ path }) => discovery.get(path.id))
      .handle("search", ({ payload }) => discovery.search(payload))
  })
)
