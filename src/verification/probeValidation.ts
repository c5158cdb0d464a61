import { Clock, Effect, Ref } from "effect"
import { AppConfig } from "../config.js"
import { InvalidRequest, RateLimited } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import type { HttpMethod, ResourceRecord } from "../domain/resources.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import type { ProbeRecording } from "./probeRecording.js"
import { validationRetryAfter } from "./probeSlots.js"

/**
 * A caller's probe of a catalog resource (`/v1/validate`): with its catalog method (another
 * method is a 400), and always recorded, as the schedule's probes are. Callers may add
 * `probes.validationsPerInterval` observations per probe interval beside the schedule's one
 * (`validationRetryAfter`; by default one, so they can never outweigh it); a validation beyond
 * that is 429 `RATE_LIMITED` with `Retry-After`, never a probe answered and silently dropped. One
 * validation of a resource runs at a time (a second meanwhile is 429 too), so concurrent callers
 * cannot all pass the check before any records.
 */
export const makeProbeValidation = (recording: ProbeRecording) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const observations = yield* ObservationsRepo
    const intervalMs = config.probes.intervalSeconds * 1000
    /** Catalog resources a caller's validation is probing now (this process): one at a time each. */
    const validating = yield* Ref.make<ReadonlySet<ResourceId>>(new Set())

    const tooMany = (record: ResourceRecord, retryAfterSeconds: number, why: string) =>
      new RateLimited({
        message:
          `${record.resource.id} is a catalog resource: ${why}; every validation answered 200 is recorded, so callers may add ` +
          `${config.probes.validationsPerInterval} observation(s) per probe interval (${config.probes.intervalSeconds} s) beside the schedule's ` +
          `(probes.validationsPerInterval); retry in ${retryAfterSeconds} s`,
        retryAfterSeconds
      })

    const release = (id: ResourceId) =>
      Ref.update(validating, (set) => {
        const next = new Set(set)
        next.delete(id)
        return next
      })

    /** Within the callers' share of the interval, the probe, recorded; beyond it, 429. */
    const probeWithinShare = (record: ResourceRecord) =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        const perInterval = config.probes.validationsPerInterval
        const newest = (yield* observations.page(record.resource.id, perInterval + 1, null)).observations.map((o) =>
          Date.parse(o.observedAt)
        )
        const retryAfter = validationRetryAfter(newest, nowMs, intervalMs, perInterval)
        if (retryAfter !== null) {
          return yield* Effect.fail(
            tooMany(record, retryAfter, `it was observed ${perInterval + 1} times in the last probe interval`)
          )
        }
        return yield* recording.probeRecord(record)
      })

    return (record: ResourceRecord, method: HttpMethod | undefined) =>
      Effect.gen(function* () {
        if (method !== undefined && method !== record.resource.method) {
          return yield* Effect.fail(
            new InvalidRequest({
              message: `method: ${record.resource.id} is a catalog resource, probed with its catalog method ${record.resource.method}, not ${method}`
            })
          )
        }
        const id = record.resource.id
        const claimed = yield* Ref.modify(validating, (set) =>
          set.has(id) ? [false, set] : [true, new Set(set).add(id)]
        )
        if (!claimed) return yield* Effect.fail(tooMany(record, 1, "another validation of it is in progress"))
        return yield* probeWithinShare(record).pipe(Effect.ensuring(release(id)))
      })
  })
