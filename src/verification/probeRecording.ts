import { Effect, identity } from "effect"
import { AppConfig } from "../config.js"
import { type ProbeResult, publicObservation } from "../domain/observations.js"
import type { ResourceRecord } from "../domain/resources.js"
import { Instruments } from "../telemetry/Instruments.js"
import { EvidenceRecorder, type ProbeBookkeeping } from "./EvidenceRecorder.js"
import type { Observed } from "./observe.js"
import { probeStep, targetOf } from "./probeStep.js"
import { requestSlots } from "./requestSlots.js"

/**
 * Probes that may wait for their batch to commit besides those holding a request slot. A probe
 * that held its slot until the writer's batch committed capped a batch at `probes.concurrency`
 * observations, and the prober waited on itself. More waiting probes mean larger batches but
 * longer turns of the event loop, which every read waits through; docs/performance.md has the
 * figures this value was picked from.
 */
const WAITING_FOR_BATCH = 16

/** A probe of a catalog resource and its record in the evidence, one at a time or many under a cap. */
export type ProbeRecording = Effect.Effect.Success<typeof makeProbeRecording>

type Claim = ProbeBookkeeping["claim"]

export const makeProbeRecording = Effect.gen(function* () {
  const config = yield* AppConfig
  const recorder = yield* EvidenceRecorder
  const instruments = yield* Instruments
  const run = probeStep(config)

  /** Records the probe in its batch's transaction, with the listing rule and `claim` (the schedule's next due time) there too. */
  const result = (record: ResourceRecord, observed: Observed, discovered: boolean, claim?: Claim) =>
    Effect.map(
      recorder
        .recordObservation(record, observed.observation, { listing: true, ...(claim !== undefined ? { claim } : {}) })
        .pipe(
          Effect.tap(() => instruments.probe(observed.observation.outcome, observed.observation.latencyMs)),
          Effect.withTracerEnabled(false)
        ),
      (standing): ProbeResult => ({
        resourceId: record.resource.id,
        discovered,
        healthy: observed.observation.outcome === "healthy",
        outcome: observed.observation.outcome,
        observation: publicObservation(observed.observation),
        challenge: observed.challenge,
        status: standing?.status ?? record.resource.status,
        verificationLevel: standing?.level ?? record.resource.verificationLevel
      })
    )

  /** `request` gates the probe's own step (a slot of the caller's); recording it waits outside the gate. */
  const probeRecord = (
    record: ResourceRecord,
    claim?: Claim,
    request: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = identity
  ) =>
    Effect.zipRight(
      recorder.beginProbe(record),
      Effect.flatMap(request(run(targetOf(record))), (observed) => result(record, observed, false, claim))
    )

  /**
   * Probes each record (completing its claim, if any), logging a store failure (a defect) and
   * answering null for it: a batch goes on without it. At most `concurrency` requests are in
   * flight, and up to WAITING_FOR_BATCH more probes wait for their batch to commit.
   */
  const probeAll = (
    items: ReadonlyArray<{ readonly record: ResourceRecord; readonly claim?: Claim }>,
    concurrency = config.probes.concurrency
  ) =>
    Effect.flatMap(requestSlots(concurrency), ({ run: request }) =>
      Effect.forEach(
        items,
        ({ record, claim }) =>
          probeRecord(record, claim, request).pipe(
            Effect.map((r) => r.outcome),
            Effect.catchAllCause((cause) =>
              Effect.logWarning(`probe of ${record.resource.id} not recorded`, cause).pipe(Effect.as(null))
            )
          ),
        { concurrency: concurrency + WAITING_FOR_BATCH }
      )
    )

  return { run, result, probeRecord, probeAll }
})
