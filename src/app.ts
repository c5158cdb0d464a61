import { Duration, Layer } from "effect"
import { CatalogLive } from "./catalog/CatalogLive.js"
import { CatalogLoad } from "./catalog/CatalogLoad.js"
import { AppConfig, type Config } from "./config.js"
import { Discovery } from "./discovery/Discovery.js"
import { EconomicProber } from "./economic/EconomicProber.js"
import { Exposition } from "./http/Exposition.js"
import { LedgerReader } from "./ledger/LedgerReader.js"
import { Lifecycle } from "./lifecycle/Lifecycle.js"
import { RateLimits } from "./limits/RateLimits.js"
import { PolicyEngine } from "./policy/PolicyEngine.js"
import { Outcomes } from "./preflight/Outcomes.js"
import { Preflight } from "./preflight/Preflight.js"
import { ReceiptService } from "./receipts/ReceiptService.js"
import { Signer } from "./receipts/Signer.js"
import { Router } from "./routing/Router.js"
import { PaymentChecks } from "./settlement/PaymentChecks.js"
import { Reconciler } from "./settlement/Reconciler.js"
import { Settlement } from "./settlement/Settlement.js"
import { StatusReader } from "./status/StatusReader.js"
import { StoreLive } from "./store/Store.js"
import { Instruments } from "./telemetry/Instruments.js"
import { EvidenceConfirmer } from "./verification/EvidenceConfirmer.js"
import type { EvidenceReader } from "./verification/EvidenceReader.js"
import type { EvidenceRecorder } from "./verification/EvidenceRecorder.js"
import { VerificationLive } from "./verification/VerificationLive.js"
import { FacilitatorPool } from "./x402/FacilitatorPool.js"

/**
 * `server` is the process that owns the journal's crash recovery (`serve`); `local` processes on
 * the same store (the MCP server, tests of single requests) must not mark a server's in-flight
 * settles. The probe schedule is composed by `serve` itself, after its listeners are up.
 */
export type Role = "server" | "local"

/** The config, the store with its catalog loaded and the process lifecycle: what every service stands on. */
export const FoundationLive = (config: Config) =>
  CatalogLoad.pipe(
    Layer.provideMerge(StoreLive(config.database)),
    Layer.provideMerge(Layer.mergeAll(Layer.succeed(AppConfig, config), Instruments.Live, Lifecycle.Live))
  )

/**
 * The settle pipeline over an evidence reader and recorder, a facilitator pool and the ledger
 * (read when a backend goes silent), with crash recovery when this process is the server. Production passes live verification and the polled
 * pool; tests pass `EvidenceReader.Test` and a pool from their own options.
 */
export const PaymentsLive = <E1, R1, E2, R2>(
  evidence: Layer.Layer<EvidenceReader | EvidenceRecorder, E1, R1>,
  pool: Layer.Layer<FacilitatorPool, E2, R2>,
  role: Role
) =>
  Layer.mergeAll(Settlement.Live, role === "server" ? Settlement.Recovery : Layer.empty).pipe(
    // The checks verify shares with settle, so the verify handler gets the same service.
    Layer.provideMerge(PaymentChecks.Live),
    Layer.provideMerge(pool),
    Layer.provideMerge(evidence),
    Layer.provideMerge(LedgerReader.Live)
  )

/**
 * What reads the ledger for evidence: the confirmer of reported payments and the reconciler of
 * settlements whose outcome is unknown. The serving process also runs both on a schedule
 * (`ledger.pollIntervalSeconds`); other processes on the same store only hold them.
 */
const LedgerWatchLive = (config: Config, role: Role) => {
  const services = Layer.mergeAll(EvidenceConfirmer.Live, Reconciler.Live)
  const interval = Duration.seconds(config.ledger.pollIntervalSeconds)
  const schedules =
    role === "server"
      ? Layer.mergeAll(EvidenceConfirmer.schedule(interval), Reconciler.schedule(interval))
      : Layer.empty
  return schedules.pipe(Layer.provideMerge(services), Layer.provideMerge(LedgerReader.Live))
}

/**
 * Every service of the running system, built once from the config. The HTTP server, the MCP
 * server and the CLI all stand on this one graph, so no rule has a second implementation.
 */
export const ServicesLive = (config: Config, role: Role = "local") => {
  const evidence = VerificationLive
  const decisions = Layer.mergeAll(Discovery.Live, PolicyEngine.Live, Preflight.Live, Router.Live)
  const receipts = ReceiptService.Live.pipe(Layer.provide(Signer.fromConfig), Layer.provide(decisions))
  const payments = PaymentsLive(evidence, FacilitatorPool.Live, role)
  const catalog = CatalogLive
  // What the status page and /metrics read, over the same services the JSON API answers from.
  const observability = Layer.mergeAll(StatusReader.Live, Exposition.Live).pipe(Layer.provide(decisions))
  const ledgerWatch = LedgerWatchLive(config, role)
  const outcomes = Outcomes.Live.pipe(Layer.provide(ledgerWatch))
  return Layer.mergeAll(
    decisions,
    receipts,
    catalog,
    observability,
    ledgerWatch,
    outcomes,
    EconomicProber.Live,
    RateLimits.Live
  ).pipe(Layer.provideMerge(payments), Layer.provideMerge(evidence), Layer.provideMerge(FoundationLive(config)))
}
