import { Effect, Either, Layer } from "effect"
import { AppConfig, loadConfig } from "../src/config.js"
import type { EconomicEvent } from "../src/domain/evidence.js"
import { emptyMetrics } from "../src/domain/metrics.js"
import type { CatalogEntry } from "../src/domain/resources.js"
import type { RankedCandidate, RouteDecision, RouteRequest } from "../src/domain/routes.js"
import { ReceiptService } from "../src/receipts/ReceiptService.js"
import type { Signer } from "../src/receipts/Signer.js"
import { Router } from "../src/routing/Router.js"
import { CatalogWritesRepo } from "../src/store/CatalogWritesRepo.js"
import { StoreLive } from "../src/store/Store.js"
import { EvidenceRecorder } from "../src/verification/EvidenceRecorder.js"
import { OTHER_PROVIDERS } from "./fixtures/otherProviders.js"
import { makeTestLayer } from "./support/testLayer.js"

/** Shared by the receipts tests and bench/receipts.ts: stand-ins for the parts receipts only consume. */

const defaults = Either.getOrThrow(loadConfig(undefined, {}))
/** The reference vertical's entries and two other providers with fixed prices (not the demo providers, whose prices are the demo's). */
export const receiptsCatalog = [
  ...defaults.catalog.filter((e) => e.provider.id === "stellar-intel"),
  ...OTHER_PROVIDERS
]

/**
 * A small, predictable router over a catalog: every resource with the capability is a candidate,
 * providers in `denyProviders` are rejected, the rest are ranked cheapest first (ties by id).
 */
export const catalogRouter = (catalog: ReadonlyArray<CatalogEntry>) =>
  makeTestLayer(Router)({
    route: (request: RouteRequest) =>
      Effect.sync((): RouteDecision => {
        const offering = catalog.filter((e) => e.resource.capabilities.includes(request.capability))
        const denied = new Set(request.constraints?.denyProviders ?? [])
        const ranked = offering
          .filter((e) => !denied.has(e.provider.id))
          .map((e) => ({ entry: e, option: e.paymentOptions[0]! }))
          .sort(
            (a, b) => a.option.amountUsd - b.option.amountUsd || a.entry.resource.id.localeCompare(b.entry.resource.id)
          )
          .map(
            ({ entry, option }, i): RankedCandidate => ({
              rank: i + 1,
              resourceId: entry.resource.id,
              providerId: entry.provider.id,
              optionIndex: 0,
              option,
              worstCaseUsd: option.maxAmountUsd ?? option.amountUsd,
              score: 1 - i / 10,
              metrics: emptyMetrics(entry.resource.id)
            })
          )
        return {
          capability: request.capability,
          optimizeFor: request.optimizeFor ?? "balanced",
          policy: request.constraints ?? {},
          selected: ranked[0] ?? null,
          fallbacks: ranked.slice(1),
          rejected: offering
            .filter((e) => denied.has(e.provider.id))
            .map((e) => ({
              resourceId: e.resource.id,
              providerId: e.provider.id,
              optionIndex: null,
              decision: "DENY" as const,
              codes: ["PROVIDER_DENIED"],
              reasons: [{ code: "PROVIDER_DENIED", message: `provider ${e.provider.id} is denied` }]
            })),
          message: ranked.length > 0 ? `${ranked.length} eligible` : "every candidate was rejected",
          metricsSnapshotAt: "2026-01-01T00:00:00.000Z",
          decidedAt: "2026-01-01T00:00:00.000Z"
        }
      })
  })

/** An EvidenceRecorder that only keeps the economic events it is given. */
export const recordingEvidence = () => {
  const events: Array<EconomicEvent> = []
  // Receipts never probe, curate or confirm: the recorder's other members die if called.
  const layer = makeTestLayer(EvidenceRecorder)({
    recordEconomic: (event) => Effect.sync(() => void events.push(event)),
    storeEconomic: (event) =>
      Effect.sync(() => {
        events.push(event)
        return false
      }),
    refreshAbout: () => Effect.void
  })
  return { events, layer }
}

const seededCatalog = Layer.effectDiscard(
  Effect.flatMap(CatalogWritesRepo, (repo) => repo.upsertCatalog(receiptsCatalog))
)

/**
 * ReceiptService.Live on a real SQLite store holding the demo catalog, with the default config
 * (testnet USDC), the catalog router, the given evidence layer and signer. The store stays exposed for checks on stored rows.
 */
export const receiptServiceLayer = (
  database: string,
  signer: Layer.Layer<Signer, unknown>,
  evidence: Layer.Layer<EvidenceRecorder>
) => {
  const store = StoreLive(database)
  return ReceiptService.Live.pipe(
    Layer.provide(
      Layer.mergeAll(
        Layer.succeed(AppConfig, defaults),
        catalogRouter(receiptsCatalog),
        evidence,
        signer,
        seededCatalog
      )
    ),
    Layer.provideMerge(store)
  )
}
