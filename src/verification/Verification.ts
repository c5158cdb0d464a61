import { Clock, Context, Effect, Either, Layer, Option } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest, type NotFound, notFound, type RateLimited, TargetRefused } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import type { ResourceMetrics } from "../domain/metrics.js"
import type { ObservationPage, ProbeResult, ResourceHistory, ValidateRequest } from "../domain/observations.js"
import { encodeCursor, PAGE_LIMITS, readCursor } from "../domain/pagination.js"
import { MetricsRepo } from "../store/MetricsRepo.js"
import { ObservationsRepo, observationCursor } from "../store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { EvidenceReader } from "./EvidenceReader.js"
import { historyHours, historyRange } from "./history.js"
import { Prober } from "./Prober.js"
import { storedWindow } from "./storedWindow.js"

/** Where a page of observations starts: `nextCursor` or `nextBefore` of the previous page. */
export interface ObservationsQuery {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly before?: string | undefined
}

/** A span of hours, as RFC 3339 instants; both optional. */
export interface HistoryQuery {
  readonly from?: string | undefined
  readonly to?: string | undefined
}

export interface VerificationShape {
  /**
   * Probes now and records the observation: a catalog resource (`resourceId`) or any URL (`url`,
   * which becomes an unlisted resource), never both. A target the outbound guard refuses is
   * `TargetRefused`, recorded first when it is a catalog resource.
   */
  readonly validate: (
    request: ValidateRequest
  ) => Effect.Effect<ProbeResult, InvalidRequest | TargetRefused | NotFound | RateLimited>
  /** A resource's stored metrics; `NotFound` for an id not in the catalog. */
  readonly metrics: (id: ResourceId) => Effect.Effect<ResourceMetrics, NotFound>
  /** A page of a resource's observations, newest first, with the newest payments about it. */
  readonly observations: (
    id: ResourceId,
    query: ObservationsQuery
  ) => Effect.Effect<typeof ObservationPage.Type, NotFound | InvalidRequest>
  /**
   * Hourly rollups of a span, the hours still in the rolling window included. The window is read
   * before the rollups: a batch committing between the two reads can then leave an hour as it was
   * at the first read, but never lose one (an hour leaving the window is stored as a rollup in the
   * same commit).
   */
  readonly history: (id: ResourceId, query: HistoryQuery) => Effect.Effect<ResourceHistory, NotFound | InvalidRequest>
}

/**
 * What the verification endpoints answer: `validate` probes now; metrics, observations and
 * history are read from the store (the metrics row, a page of observations, hourly rollups and
 * the rolling window), never recomputed from raw observations per request (but once for a window
 * stored before rolling windows existed, as the recorder rebuilds it).
 */
export class Verification extends Context.Tag("sextant/Verification")<Verification, VerificationShape>() {
  static readonly Live = Layer.effect(
    Verification,
    Effect.suspend(() => make)
  )
}

const OBSERVATIONS_CURSOR = "observations"

const refused = (reason: string) => new TargetRefused({ message: `target refused: ${reason}` })

/** A probe of a catalog resource the guard refused is recorded, and still answered as a refusal. */
const refusalOf = (result: ProbeResult) =>
  result.outcome === "refused_target"
    ? refused(result.observation.detail ?? "not a public target")
    : Effect.succeed(result)

/** Where the page starts: after a cursor's observation, before `before`, or at the newest. */
const startOf = (query: ObservationsQuery): Effect.Effect<string | null, InvalidRequest> => {
  if (query.cursor !== undefined && query.before !== undefined)
    return new InvalidRequest({ message: "pass either cursor or before, not both" })
  if (query.cursor !== undefined)
    return Effect.map(readCursor(OBSERVATIONS_CURSOR, query.cursor), (position) => position.id)
  if (query.before === undefined) return Effect.succeed(null)
  const start = observationCursor(query.before)
  return start === null
    ? new InvalidRequest({
        message: "before: expected an observation id (nextBefore of the previous page) or an ISO date-time"
      })
    : Effect.succeed(start)
}

const make = Effect.gen(function* () {
  const prober = yield* Prober
  const reader = yield* EvidenceReader
  const resources = yield* ResourceReadsRepo
  const observations = yield* ObservationsRepo
  const metricsRepo = yield* MetricsRepo
  const config = yield* AppConfig
  const windowOfResource = storedWindow(observations, config.verification)

  const requireResource = (id: ResourceId) =>
    Effect.flatMap(resources.get(id), (found) =>
      Option.isSome(found) ? Effect.succeed(found.value) : notFound("resource", id)
    )

  const validate: VerificationShape["validate"] = ({ resourceId, url, method }) => {
    if (resourceId !== undefined && url !== undefined)
      return new InvalidRequest({ message: "pass either resourceId or url, not both" })
    if (resourceId !== undefined) return Effect.flatMap(prober.validateResource(resourceId, method), refusalOf)
    if (url !== undefined) {
      return prober.probeUrl(url, method).pipe(
        Effect.catchTag("OutboundTargetRefused", (e) => refused(e.reason)),
        Effect.flatMap(refusalOf)
      )
    }
    return new InvalidRequest({ message: "pass resourceId (a catalog resource) or url (any http(s) URL)" })
  }

  const observationsOf: VerificationShape["observations"] = (id, query) =>
    Effect.gen(function* () {
      const record = yield* requireResource(id)
      const start = yield* startOf(query)
      const economic = yield* reader.payments(record)
      const found = yield* observations.page(id, query.limit ?? PAGE_LIMITS.observations.default, start)
      const nextCursor = found.nextBefore === null ? null : encodeCursor(OBSERVATIONS_CURSOR, { id: found.nextBefore })
      return { resourceId: id, ...found, nextCursor, economic }
    })

  const history: VerificationShape["history"] = (id, query) =>
    Effect.gen(function* () {
      const record = yield* requireResource(id)
      const nowMs = yield* Clock.currentTimeMillis
      const range = yield* Either.mapLeft(
        historyRange(query, nowMs, config.probes.retentionDays),
        (message) => new InvalidRequest({ message })
      )
      const window = yield* windowOfResource(record, (yield* metricsRepo.windowStates([id])).get(id), nowMs)
      const rollups = yield* observations.rollups(id, range.fromMs, range.toMs)
      return { resourceId: id, hours: historyHours(rollups, window.buckets, range) }
    })

  return Verification.of({
    validate,
    metrics: (id) =>
      Effect.zipRight(
        requireResource(id),
        Effect.map(reader.forResource(id), (evidence) => evidence.metrics)
      ),
    observations: observationsOf,
    history
  })
})
