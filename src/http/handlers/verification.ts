import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Either, Option } from "effect"
import { AppConfig } from "../../config.js"
import { InvalidRequest, type NotFound, notFound, type RateLimited, TargetRefused } from "../../domain/errors.js"
import type { ProbeResult, ValidateRequest } from "../../domain/observations.js"
import { encodeCursor, PAGE_LIMITS, readCursor } from "../../domain/pagination.js"
import { MetricsRepo } from "../../store/MetricsRepo.js"
import { ObservationsRepo, observationCursor } from "../../store/ObservationsRepo.js"
import { ResourceReadsRepo } from "../../store/ResourceReadsRepo.js"
import { EvidenceReader } from "../../verification/EvidenceReader.js"
import { historyHours, historyRange } from "../../verification/history.js"
import { Prober } from "../../verification/Prober.js"
import { storedWindow } from "../../verification/storedWindow.js"
import { SextantApi } from "../../contract/index.js"
import type { HistoryQuery, ObservationsQuery } from "../../contract/verification.js"
import type { ResourceId } from "../../domain/ids.js"

const OBSERVATIONS_CURSOR = "observations"

const refused = (reason: string) => new TargetRefused({ message: `target refused: ${reason}` })

/** A probe of a catalog resource the guard refused is recorded, and still answered as a refusal. */
const refusalOf = (result: ProbeResult) =>
  result.outcome === "refused_target" ? Effect.fail(refused(result.observation.detail ?? "not a public target")) : Effect.succeed(result)

/**
 * `/v1/validate` probes now and records the observation; metrics, observations and history are
 * read from the store (the metrics row, a page of observations, hourly rollups and the rolling
 * window), never recomputed from raw observations per request (but once for a window stored
 * before rolling windows existed, as the recorder rebuilds it).
 */
export const VerificationHandlers = HttpApiBuilder.group(SextantApi, "verification", (handlers) =>
  Effect.gen(function* () {
    const prober = yield* Prober
    const reader = yield* EvidenceReader
    const resources = yield* ResourceReadsRepo
    const observations = yield* ObservationsRepo
    const metrics = yield* MetricsRepo
    const config = yield* AppConfig
    const windowOfResource = storedWindow(observations, config.verification)

    const requireResource = (id: ResourceId) =>
      Effect.flatMap(resources.get(id), (found) => (Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(notFound("resource", id))))

    const validate = ({ resourceId, url, method }: ValidateRequest): Effect.Effect<ProbeResult, InvalidRequest | TargetRefused | NotFound | RateLimited> => {
      if (resourceId !== undefined && url !== undefined) {
        return Effect.fail(new InvalidRequest({ message: "pass either resourceId or url, not both" }))
      }
      if (resourceId !== undefined) return Effect.flatMap(prober.validateResource(resourceId, method), refusalOf)
      if (url !== undefined) {
        return prober.probeUrl(url, method).pipe(
          Effect.catchTag("OutboundTargetRefused", (e) => Effect.fail(refused(e.reason))),
          Effect.flatMap(refusalOf)
        )
      }
      return Effect.fail(new InvalidRequest({ message: "pass resourceId (a catalog resource) or url (any http(s) URL)" }))
    }

    /** Where the page starts: after a cursor's observation, before `before`, or at the newest. */
    const startOf = (query: typeof ObservationsQuery.Type): Effect.Effect<string | null, InvalidRequest> => {
      if (query.cursor !== undefined && query.before !== undefined) {
        return Effect.fail(new InvalidRequest({ message: "pass either cursor or before, not both" }))
      }
      if (query.cursor !== undefined) {
        return Effect.map(readCursor(OBSERVATIONS_CURSOR, query.cursor), (position) => position.id)
      }
      if (query.before === undefined) return Effect.succeed(null)
      const start = observationCursor(query.before)
      return start === null
        ? Effect.fail(new InvalidRequest({ message: "before: expected an observation id (nextBefore of the previous page) or an ISO date-time" }))
        : Effect.succeed(start)
    }

    const page = (id: ResourceId, query: typeof ObservationsQuery.Type) =>
      Effect.gen(function* () {
        const record = yield* requireResource(id)
        const start = yield* startOf(query)
        const economic = yield* reader.payments(record)
        const found = yield* observations.page(id, query.limit ?? PAGE_LIMITS.observations.default, start)
        const nextCursor = found.nextBefore === null ? null : encodeCursor(OBSERVATIONS_CURSOR, { id: found.nextBefore })
        return { resourceId: id, ...found, nextCursor, economic }
      })

    /**
     * The window is read before the rollups: a batch committing between the two reads can then
     * leave an hour as it was at the first read, but never lose one (an hour leaving the window is
     * stored as a rollup in the same commit).
     */
    const history = (id: ResourceId, query: typeof HistoryQuery.Type) =>
      Effect.gen(function* () {
        const record = yield* requireResource(id)
        const nowMs = yield* Clock.currentTimeMillis
        const range = yield* Either.mapLeft(historyRange(query, nowMs, config.probes.retentionDays), (message) => new InvalidRequest({ message }))
        const window = yield* windowOfResource(record, (yield* metrics.windowStates([id])).get(id), nowMs)
        const rollups = yield* observations.rollups(id, range.fromMs, range.toMs)
        return { resourceId: id, hours: historyHours(rollups, window.buckets, range) }
      })

    return handlers
      .handle("validate", ({ payload }) => validate(payload))
      .handle("metrics", ({ path }) =>
        Effect.zipRight(requireResource(path.id), Effect.map(reader.forResource(path.id), (evidence) => evidence.metrics))
      )
      .handle("observations", ({ path, urlParams }) => page(path.id, urlParams))
      .handle("history", ({ path, urlParams }) => history(path.id, urlParams))
  })
)
