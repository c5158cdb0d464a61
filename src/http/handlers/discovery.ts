import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { SextantApi } from "../../contract/index.js"
import { Discovery } from "../../discovery/Discovery.js"

export const DiscoveryHandlers = HttpApiBuilder.group(SextantApi, "discovery", (handlers) =>
  Effect.map(Discovery, (discovery) =>
    handlers
      .handle("resources", ({ urlParams }) => discovery.x402Page(urlParams))
      .handle("search", ({ urlParams }) => discovery.x402Search(urlParams))
  )
)
