import { FetchHttpClient } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AppConfig, type Config } from "./config.js"
import { Discovery } from "./discovery/Discovery.js"
import { PolicyEngine } from "./policy/PolicyEngine.js"
import { Router } from "./routing/Router.js"
import { DatabaseLive } from "./store/Database.js"
import { ResourcesRepo } from "./store/ResourcesRepo.js"
import { ReceiptService } from "./receipts/ReceiptService.js"
import { Signer } from "./receipts/Signer.js"
import { Settlement } from "./settlement/Settlement.js"
import { FacilitatorPool } from "./x402/FacilitatorPool.js"
import { VerificationLive } from "./verification/VerificationLive.js"

/** Loads the configured catalog into the store at start; idempotent, so restarts change nothing. */
const CatalogLoad = Layer.effectDiscard(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const repo = yield* ResourcesRepo
    yield* repo.upsertCatalog(config.catalog)
    yield* Effect.logInfo(`catalog loaded: ${config.catalog.length} resources`)
  })
)

/**
 * `server` is the process that owns the journal's crash recovery (`serve`); `local` processes on
 * the same store (the MCP server, tests of single requests) must not mark a server's in-flight
 * settles. The probe schedule is composed by `serve` itself, after its listeners are up.
 */
export type Role = "server" | "local"

/**
 * Every service of the running system, built once from the config. The HTTP server, the MCP
 * server and the CLI all stand on this one graph, so no rule has a second implementation.
 */
export const ServicesLive = (config: Config, role: Role = "local") => {
  const base = Layer.mergeAll(Layer.succeed(AppConfig, config), DatabaseLive(config.database))
  const repos = ResourcesRepo.Live.pipe(Layer.provideMerge(base))
  const evidence = VerificationLive.pipe(Layer.provide(FetchHttpClient.layer))
  const services = Discovery.Live.pipe(Layer.provideMerge(evidence), Layer.provideMerge(repos))
  const payments = Settlement.Live.pipe(Layer.provideMerge(FacilitatorPool.Live), Layer.provide(services))
  const decisions = Layer.mergeAll(PolicyEngine.Live, Router.Live).pipe(Layer.provide(services))
  const receipts = ReceiptService.Live.pipe(Layer.provide(Signer.fromConfig), Layer.provide(Layer.merge(decisions, services)))
  const recovery = role === "server" ? Settlement.Recovery.pipe(Layer.provide(services)) : Layer.empty
  return Layer.mergeAll(CatalogLoad, payments, decisions, receipts, recovery).pipe(Layer.provideMerge(services))
}
