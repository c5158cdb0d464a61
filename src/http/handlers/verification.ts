import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { BadRequest, notFound } from "../../domain/errors.js"
import type { ProbeResult } from "../../domain/observations.js"
import { ObservationsRepo, observationCursor } from "../../store/ObservationsRepo.js"
import { ResourcesRepo } from "../../store/ResourcesRepo.js"
import { EvidenceReader } from "../../verification/EvidenceReader.js"
import { Prober } from "../../verification/Prober.js"
import { SextantApi } from "../api/index.js"

const DEFAULT_PAGE = 50

const refused = (reason: string) => new BadRequest({ error: "TARGET_REFUSED", message: `target refused: ${reason}` })

/** A probe of a catalog resource the guard refused is recorded, and still answered as a refusal. */
const refusalOf = (result: ProbeResult) =>
  result.outcome === "refused_target" ? Effect.fail(refused(result.observation.detail ?? "not a public target")) : Effect.succeed(result)

/**
 * `/v1/validate` probes now and records the observation; metrics and observations are read from
 * the store (the metrics row, a page of observations), never recomputed from history per request.
 */
export const VerificationHandlers = HttpApiBuilder.group(SextantApi, "verification", (handlers) =>
  Effect.gen(function* () {
    const prober = yield* Prober
    const reader = yield* EvidenceReader
    const resources = yield* ResourcesRepo
    const observations = yield* ObservationsRepo

    const requireResource = (id: string) =>
      resources.get(id).pipe(
        Effect.orDie,
        Effect.flatMap((found) => (Option.isSome(found) ? Effect.void : Effect.fail(notFound("resource", id))))
      )

    return handlers
      .handle("validate", ({ payload }) => {
        if (payload.resourceId !== undefined && payload.url !== undefined) {
          return Effect.fail(
            new BadRequest({ error: "INVALID_REQUEST", message: "pass either resourceId or url, not both" })
          )
        }
        if (payload.resourceId !== undefined) {
          return prober.probeResource(payload.resourceId, payload.method).pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.flatMap(refusalOf)
          )
        }
        if (payload.url !== undefined) {
          return prober.probeUrl(payload.url, payload.method).pipe(
            Effect.catchTags({ SqlError: Effect.die, TargetRefused: (e) => Effect.fail(refused(e.reason)) }),
            Effect.flatMap(refusalOf)
          )
        }
        return Effect.fail(
          new BadRequest({ error: "INVALID_REQUEST", message: "pass resourceId (a catalog resource) or url (any http(s) URL)" })
        )
      })
      .handle("metrics", ({ path }) =>
        Effect.zipRight(
          requireResource(path.id),
          reader.forResource(path.id).pipe(Effect.map((evidence) => evidence.metrics))
        )
      )
      .handle("observations", ({ path, urlParams }) =>
        Effect.gen(function* () {
          yield* requireResource(path.id)
          const cursor = urlParams.before === undefined ? null : observationCursor(urlParams.before)
          if (urlParams.before !== undefined && cursor === null) {
            return yield* Effect.fail(
              new BadRequest({
                error: "INVALID_REQUEST",
                message: "before: expected an observation id (nextBefore of the previous page) or an ISO date-time"
              })
            )
          }
          const page = yield* observations.page(path.id, urlParams.limit ?? DEFAULT_PAGE, cursor).pipe(Effect.orDie)
          return { resourceId: path.id, ...page }
        })
      )
  })
)
