import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { InvalidRequest, type NotFound, notFound, TargetRefused } from "../../domain/errors.js"
import type { ProbeResult, ValidateRequest } from "../../domain/observations.js"
import { ObservationsRepo, observationCursor } from "../../store/ObservationsRepo.js"
import { ResourcesRepo } from "../../store/ResourcesRepo.js"
import { EvidenceReader } from "../../verification/EvidenceReader.js"
import { Prober } from "../../verification/Prober.js"
import { SextantApi } from "../api/index.js"

const DEFAULT_PAGE = 50

const refused = (reason: string) => new TargetRefused({ message: `target refused: ${reason}` })

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
      Effect.flatMap(resources.get(id), (found) => (Option.isSome(found) ? Effect.succeed(found.value) : Effect.fail(notFound("resource", id))))

    const validate = ({ resourceId, url, method }: ValidateRequest): Effect.Effect<ProbeResult, InvalidRequest | TargetRefused | NotFound> => {
      if (resourceId !== undefined && url !== undefined) {
        return Effect.fail(new InvalidRequest({ message: "pass either resourceId or url, not both" }))
      }
      if (resourceId !== undefined) return Effect.flatMap(prober.probeResource(resourceId, method), refusalOf)
      if (url !== undefined) {
        return prober.probeUrl(url, method).pipe(
          Effect.catchTag("TargetRefused", (e) => Effect.fail(refused(e.reason))),
          Effect.flatMap(refusalOf)
        )
      }
      return Effect.fail(new InvalidRequest({ message: "pass resourceId (a catalog resource) or url (any http(s) URL)" }))
    }

    const page = (id: string, limit: number | undefined, before: string | undefined) =>
      Effect.gen(function* () {
        const record = yield* requireResource(id)
        const cursor = before === undefined ? null : observationCursor(before)
        if (before !== undefined && cursor === null) {
          return yield* Effect.fail(
            new InvalidRequest({ message: "before: expected an observation id (nextBefore of the previous page) or an ISO date-time" })
          )
        }
        const economic = yield* reader.payments(record)
        return { resourceId: id, ...(yield* observations.page(id, limit ?? DEFAULT_PAGE, cursor)), economic }
      })

    return handlers
      .handle("validate", ({ payload }) => validate(payload))
      .handle("metrics", ({ path }) =>
        Effect.zipRight(requireResource(path.id), Effect.map(reader.forResource(path.id), (evidence) => evidence.metrics))
      )
      .handle("observations", ({ path, urlParams }) => page(path.id, urlParams.limit, urlParams.before))
  })
)
