import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../config.js"
import {
  type EconomicEvidence,
  noEvidence,
  type PayeeEvidence,
  type ProviderEvidence,
  providerEvidenceOf,
  type ResourceEvidence
} from "../domain/evidence.js"
import type { ResourceId } from "../domain/ids.js"
import type { ResourceMetrics, StoredStanding } from "../domain/metrics.js"
import type { ResourceRecord } from "../domain/resources.js"
import { CatalogChanges } from "../store/CatalogChanges.js"
import { EconomicEventsRepo } from "../store/EconomicEventsRepo.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { RouteCandidatesRepo } from "../store/RouteCandidatesRepo.js"
import { CapabilityIndex, heldReads } from "./capabilityIndex.js"
import { EvidenceRecorder } from "./EvidenceRecorder.js"
import { currentMetrics, lastObservedMsOf, type MetricsMoment, metricsAt, momentAt } from "./metrics.js"

export interface EvidenceReaderShape {
  /** Evidence of one resource; a resource never probed gets empty metrics and level 0. */
  readonly forResource: (resourceId: ResourceId) => Effect.Effect<ResourceEvidence>
  readonly forResources: (
    resourceIds: ReadonlyArray<ResourceId>
  ) => Effect.Effect<ReadonlyMap<string, ResourceEvidence>>
  /**
   * The listed resources offering a capability, each with its evidence as of now, and when their
   * rows were read (the live layer holds them in memory for up to ROUTE_READ_TTL_MS): what a route needs.
   */
  readonly forCapability: (capability: string) => Effect.Effect<CapabilityEvidence>
  /** Every listed resource whose payment options pay `payTo`, with its evidence; empty when none does. */
  readonly forPayee: (payTo: string) => Effect.Effect<ReadonlyArray<PayeeEvidence>>
  /**
   * A few of `forPayee`'s resources, by provider and evidence only: a quarantined one if any is,
   * one of a provider in `deniedProviders` if any pays the payee, and the first few that could pass
   * a policy. A payee check that allows on them allows on all (Settlement.checkPayee).
   */
  readonly payeeShortlist: (
    payTo: string,
    deniedProviders: ReadonlyArray<string>,
    paidUrl?: string
  ) => Effect.Effect<ReadonlyArray<ProviderEvidence>>
  /** The newest payments about a resource (named by it, or paying one of its payees), newest first. */
  readonly payments: (record: ResourceRecord) => Effect.Effect<ReadonlyArray<EconomicEvidence>>
}

/** A capability's candidates with their evidence, and when the rows it was derived from were read. */
export interface CapabilityEvidence {
  readonly candidates: ReadonlyArray<PayeeEvidence>
  readonly readAtMs: number
}

/**
 * How long a capability's candidates read from the store answer routes: the longest another
 * instance's writes (probe results, curation) go unseen here. This process's own writes are seen
 * by the next read (CatalogChanges).
 */
export const ROUTE_READ_TTL_MS = 1_000
/** Capabilities held at once, oldest dropped first. */
const CAPABILITIES_HELD = 10_000

/** Payments shown with a resource. */
const PAYMENTS_SHOWN = 20
/** Resources a payee shortlist reads that could pass a policy (plus a quarantined one and a denied provider's). */
const SHORTLIST = 4

/**
 * The read side of verification: what policy, routing, settlement and receipts know of a resource.
 * The live layer reads each resource's status and its metrics row, kept current by EvidenceRecorder.
 */
export class EvidenceReader extends Context.Tag("sextant/EvidenceReader")<EvidenceReader, EvidenceReaderShape>() {
  /**
   * Reads the stored metrics row of each resource and applies only what depends on the time of
   * reading (confidence, window expiry): no observation history is scanned. A capability's
   * candidates are held in memory (CapabilityIndex) until this process changes them or
   * ROUTE_READ_TTL_MS passes.
   */
  static readonly Live = Layer.effect(
    EvidenceReader,
    Effect.gen(function* () {
      const config = yield* AppConfig
      const metrics = yield* MetricsRepo
      const reads = yield* ResourceReadsRepo
      const candidates = yield* RouteCandidatesRepo
      const economic = yield* EconomicEventsRepo
      const index = new CapabilityIndex(ROUTE_READ_TTL_MS, CAPABILITIES_HELD)
      yield* (yield* CatalogChanges).subscribe((change) => index.apply(change))
      const capabilityRows = heldReads(index, candidates.byCapabilityWithStandings)

      const evidenceOf = (stored: StoredStanding, metrics: ResourceMetrics): ResourceEvidence => ({
        resourceId: stored.resourceId,
        status: stored.status,
        verificationLevel: stored.level,
        metrics,
        lastObservedAt: stored.snapshot?.lastObservedAt ?? null,
        validChallengeSeen: stored.snapshot?.validChallengeSeen ?? false,
        transactionVerified: stored.snapshot?.transactionVerified ?? false,
        operatorQuarantined: stored.operatorQuarantine !== null
      })
      const toEvidence = (stored: StoredStanding, nowMs: number) =>
        evidenceOf(stored, currentMetrics(stored.resourceId, stored.snapshot, nowMs, config.verification))

      /**
       * The evidence last derived from each held standing, handed out again while its moment (window,
       * confidence to three decimals) is unchanged: equal to deriving it afresh, without building a
       * hundred objects per route. Weak, so it goes with the held read.
       */
      const derived = new WeakMap<
        StoredStanding,
        { readonly lastObservedMs: number | null; moment: MetricsMoment; evidence: ResourceEvidence }
      >()
      const heldEvidence = (stored: StoredStanding, nowMs: number): ResourceEvidence => {
        const last = derived.get(stored)
        const lastObservedMs = last === undefined ? lastObservedMsOf(stored.snapshot) : last.lastObservedMs
        const moment = momentAt(lastObservedMs, stored.snapshot?.observationCount ?? 0, nowMs, config.verification)
        if (
          last !== undefined &&
          last.moment.inWindow === moment.inWindow &&
          last.moment.confidence === moment.confidence
        )
          return last.evidence
        const evidence = evidenceOf(stored, metricsAt(stored.resourceId, stored.snapshot, moment))
        derived.set(stored, { lastObservedMs, moment, evidence })
        return evidence
      }

      const forResources = Effect.fn("EvidenceReader.forResources")(function* (resourceIds: ReadonlyArray<ResourceId>) {
        const nowMs = yield* Clock.currentTimeMillis
        const stored = yield* metrics.standings([...new Set(resourceIds)])
        return new Map(stored.map((s) => [s.resourceId, toEvidence(s, nowMs)] as const)) as ReadonlyMap<
          string,
          ResourceEvidence
        >
      })

      const withEvidence = (records: ReadonlyArray<ResourceRecord>) =>
        Effect.map(forResources(records.map((r) => r.resource.id)), (found) =>
          records.map((record) => ({
            record,
            evidence: found.get(record.resource.id) ?? noEvidence(record.resource.id)
          }))
        )

      return {
        forResource: Effect.fn("EvidenceReader.forResource")(function* (resourceId: ResourceId) {
          return (yield* forResources([resourceId])).get(resourceId) ?? noEvidence(resourceId)
        }),
        forResources,
        // No span of its own: it answers from memory in a few microseconds, under Router.route's.
        forCapability: (capability: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (nowMs) =>
            Effect.map(capabilityRows(capability, nowMs), ({ candidates, readAtMs }) => ({
              // Evidence at the time of this read, not of the rows': confidence and window expiry move on.
              candidates: candidates.map(({ record, standing }) => ({
                record,
                evidence: heldEvidence(standing, nowMs)
              })),
              readAtMs
            }))
          ),
        forPayee: Effect.fn("EvidenceReader.forPayee")(function* (payTo: string) {
          return yield* withEvidence(yield* reads.byPayTo(payTo))
        }),
        payeeShortlist: Effect.fn("EvidenceReader.payeeShortlist")(function* (
          payTo: string,
          deniedProviders: ReadonlyArray<string>,
          paidUrl?: string
        ) {
          const nowMs = yield* Clock.currentTimeMillis
          const found = yield* metrics.payeeShortlist(payTo, {
            limit: SHORTLIST,
            deniedProviders,
            paidUrl,
            trustedOnly: !config.ingestion.untrustedPayeeStanding,
            // Older evidence fails every policy: a policy's age limit may only tighten the configured one.
            observedSince: new Date(nowMs - config.verification.maxEvidenceAgeSeconds * 1000).toISOString()
          })
          return found.map(({ providerId, url, trusted, standing }) => ({
            providerId,
            url,
            trusted,
            evidence: toEvidence(standing, nowMs)
          }))
        }),
        payments: (record: ResourceRecord) =>
          economic.recent(record.resource.id, [...new Set(record.paymentOptions.map((o) => o.payTo))], PAYMENTS_SHOWN)
      }
    })
  )

  /**
   * Evidence held in memory for tests of policy, routing, settlement and receipts: a fixed catalog
   * and fixed evidence. Reported payments change nothing here: only the ledger confirms one, and
   * in-memory evidence has no ledger. Probe recording dies, since no probe runs against it.
   */
  static readonly Test = (
    catalog: ReadonlyArray<ResourceRecord>,
    initial: ReadonlyArray<ResourceEvidence>
  ): Layer.Layer<EvidenceReader | EvidenceRecorder> => {
    const store = new Map(initial.map((e) => [e.resourceId, e]))
    const get = (id: ResourceId) => store.get(id) ?? noEvidence(id)
    const forPayee = (payTo: string) =>
      Effect.sync(() =>
        catalog
          .filter((r) => r.listing.listed && r.paymentOptions.some((o) => o.payTo === payTo))
          .map((record) => ({ record, evidence: get(record.resource.id) }))
      )
    const reader: EvidenceReaderShape = {
      forResource: (id) => Effect.sync(() => get(id)),
      forResources: (ids) => Effect.sync(() => new Map(ids.map((id) => [id, get(id)]))),
      forCapability: (capability) =>
        Effect.map(Clock.currentTimeMillis, (readAtMs) => ({
          candidates: catalog
            .filter((r) => r.listing.listed && r.resource.capabilities.includes(capability))
            .map((record) => ({ record, evidence: get(record.resource.id) })),
          readAtMs
        })),
      forPayee: (payTo) => forPayee(payTo),
      payeeShortlist: (payTo) => Effect.map(forPayee(payTo), (payees) => payees.map(providerEvidenceOf)),
      payments: () => Effect.succeed([])
    }
    const noProbes = () => Effect.dieMessage("in-memory evidence records no probes")
    return Layer.merge(
      Layer.succeed(EvidenceReader, reader),
      Layer.succeed(
        EvidenceRecorder,
        EvidenceRecorder.of({
          beginProbe: noProbes,
          recordObservation: noProbes,
          rederive: noProbes,
          recordEconomic: () => Effect.void,
          storeEconomic: () => Effect.succeed(false),
          refreshAbout: () => Effect.void,
          resolveEconomic: () => Effect.dieMessage("in-memory evidence has no ledger to confirm payments with")
        })
      )
    )
  }
}
