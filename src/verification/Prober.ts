import { Clock, Context, Effect, identity, Layer, Option, Ref, Schema } from "effect"
import { createHash } from "node:crypto"
import { AppConfig, type Config } from "../config.js"
import { redactorFor } from "../redaction/redact.js"
import { InvalidRequest, type NotFound, notFound, RateLimited } from "../domain/errors.js"
import type { ProbeResult } from "../domain/observations.js"
import {
  type CatalogEntry,
  type HttpMethod,
  type ResourceRecord,
  ResourcePaymentOption
} from "../domain/resources.js"
import { baseUnitsToUsd } from "../domain/stellar.js"
import { commitWithoutFlush } from "../store/commitDurability.js"
import { ObservationsRepo } from "../store/ObservationsRepo.js"
import { type ProbeLane, ProbeScheduleRepo } from "../store/ProbeScheduleRepo.js"
import { CatalogWritesRepo } from "../store/CatalogWritesRepo.js"
import { ResourceListingRepo } from "../store/ResourceListingRepo.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import type { ListingChange } from "../store/listingChanges.js"
import { isAcceptable } from "./challenge.js"
import { Instruments } from "../telemetry/Instruments.js"
import { EvidenceRecorder, type ProbeBookkeeping } from "./EvidenceRecorder.js"
import { guardTarget, OutboundTargetRefused } from "./outboundGuard.js"
import { observeMcp } from "./mcpProbe.js"
import { mcpSessions } from "./mcpSessions.js"
import type { McpTool } from "../domain/mcp.js"
import { type Observed, observe, type ProbeTarget } from "./observe.js"
import { publicObservation } from "../domain/observations.js"
import { backoffIntervals, nextDue, validationRetryAfter } from "./probeSlots.js"
import { requestSlots } from "./requestSlots.js"
import { serviceMetadataOf } from "../domain/serviceMetadata.js"
import { ResourceId } from "../domain/ids.js"

/** What one scheduled pass over the catalog did. */
export interface CycleReport {
  readonly startedAt: string
  readonly durationMs: number
  readonly probed: number
  readonly healthy: number
  /** Probes whose result could not be recorded (a store failure); the cycle went on without them. */
  readonly unrecorded: number
  readonly pruned: number
  /** Unlisted resources `/v1/validate` created and nobody validated within `verification.unlistedRetentionHours`, deleted. */
  readonly prunedUnlisted: number
  /** Untrusted entries unhealthy for `ingestion.retireAfterHours`, deleted. */
  readonly retired: number
}

/** Probes: the catalog on its schedule, one resource or URL on demand, and retention. */
export interface ProberShape {
  /** Ingestion's first step for a URL the catalog does not list: probed, nothing stored; a refused target fails before any traffic. */
  readonly observeNewUrl: (url: URL, method: HttpMethod, mcp?: McpTool) => Effect.Effect<Observed, OutboundTargetRefused>
  /** Ingestion's second step: the row for the URL from what its probe saw (listed or not, from `source`), then the observation. */
  readonly adopt: (
    url: URL,
    method: HttpMethod,
    observed: Observed,
    source: string,
    listed: boolean,
    change: ListingChange,
    mcp?: McpTool
  ) => Effect.Effect<ProbeResult>
  /** Probes a catalog resource now, as the schedule does, and records the observation (`sextant probe <id>`). */
  readonly probeResource: (resourceId: ResourceId) => Effect.Effect<ProbeResult, NotFound>
  /**
   * A caller's probe of a catalog resource (`/v1/validate {resourceId}`), always recorded; 429
   * when callers would add more than one observation per probe interval beside the schedule's.
   */
  readonly validateResource: (resourceId: ResourceId, method?: HttpMethod) => Effect.Effect<ProbeResult, NotFound | InvalidRequest | RateLimited>
  /** Probes any URL (`/v1/validate`); an unknown one becomes an unlisted resource (source "validate"). */
  readonly probeUrl: (rawUrl: string, method?: HttpMethod) => Effect.Effect<ProbeResult, OutboundTargetRefused | InvalidRequest | RateLimited>
  /** Applies retention: old observations and rollups, stale unlisted resources and retired entries deleted. */
  readonly prune: Effect.Effect<Pick<CycleReport, "pruned" | "prunedUnlisted" | "retired">>
  /** Gives every probe target a due time and forgets resources that stopped being targets. */
  readonly syncSchedule: Effect.Effect<{ readonly added: number; readonly removed: number }>
  /** Claims up to `limit` due resources of `lane` as `owner` and probes them; answers how many were claimed. */
  readonly runDue: (owner: string, limit: number, lane?: ProbeLane) => Effect.Effect<number>
  /** One pass over the whole catalog now (`sextant probe`), then retention. */
  readonly runCycle: Effect.Effect<CycleReport>
}

export class Prober extends Context.Tag("sextant/Prober")<Prober, ProberShape>() {
  static readonly Live = Layer.effect(Prober, Effect.suspend(() => make))
}

/**
 * Rows deleted per statement when pruning. bun:sqlite blocks the event loop while a statement runs:
 * 2,000 observations took about 80 ms, and every request waited that long; 200 take a few ms.
 */
const PRUNE_BATCH = 200
/** Probe targets the schedule's sync compares with its rows at a time. */
const SYNC_PAGE = 1000
/** Resources whose old hourly rollups one pruning statement deletes (a few hours each at most, once the backlog is gone). */
const PRUNE_RESOURCES = 100

/**
 * Lets the event loop serve what is waiting (requests, answers of other probes) before going on.
 * `Effect.yieldNow` does not: Effect resumes the fiber in a microtask, which runs before any I/O.
 * Real time, not the Clock, so a TestClock never holds it.
 */
const letIoIn = Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))

const isPaymentOption = Schema.is(ResourcePaymentOption)

/**
 * The catalog entry for a URL found by `/v1/validate`: its payment options are the acceptable
 * ones its own challenge offered, so later probes judge it against what it first asked.
 */
export const discoveredEntry = (
  id: ResourceId,
  url: URL,
  method: HttpMethod,
  observed: Observed,
  config: Config,
  mcp?: McpTool
): CatalogEntry => {
  const deployment = { network: config.network, assetContract: config.asset.assetContract }
  const options = observed.options
    .filter((o) => isAcceptable(o, deployment))
    .map((o) => {
      const usd = baseUnitsToUsd(o.amount, config.asset.decimals)
      return {
        network: o.network,
        scheme: o.scheme,
        asset: o.asset,
        amount: o.amount,
        amountUsd: usd,
        ...(o.maxAmount !== null ? { maxAmount: o.maxAmount, maxAmountUsd: usd } : {}),
        payTo: o.payTo
      }
    })
    .filter(isPaymentOption)
  const challenge = observed.challenge
  const description = challenge?.x402Version === 2 ? challenge.resource.description : undefined
  // The seller's own 402 names its service (2.27 `resource.serviceName`, `tags`, `iconUrl`).
  const service = challenge?.x402Version === 2 ? serviceMetadataOf({ ...challenge.resource, url: url.href }) : {}
  return {
    resource: {
      id,
      type: mcp === undefined ? "http" : "mcp",
      name: mcp?.toolName ?? `${url.host}${url.pathname}`,
      description: description || `Found by /v1/validate at ${url.href}`,
      url: url.href,
      method,
      ...(mcp !== undefined ? { mcp } : {}),
      capabilities: [],
      ...service
    },
    provider: { id: `host:${url.host}`, name: url.host, url: url.origin },
    paymentOptions: options
  }
}

/** Derived from the URL, so two concurrent first validations of one URL write the same row. */
export const discoveredId = (url: URL) => ResourceId.make(`discovered-${createHash("sha256").update(url.href).digest("hex").slice(0, 16)}`)

/** One server's tools share its URL: an MCP tool's id hashes the URL and the tool. */
export const discoveredToolId = (url: URL, toolName: string) => discoveredId(new URL(`#${encodeURIComponent(toolName)}`, url))

const idOf = (url: URL, mcp: McpTool | undefined) => (mcp === undefined ? discoveredId(url) : discoveredToolId(url, mcp.toolName))

/**
 * Probes that may wait for their batch to commit besides those holding a request slot. A probe
 * that held its slot until the writer's batch committed (up to 10 ms of gathering plus the batch)
 * capped a batch at `probes.concurrency` observations: with the default 8, the prober waited on
 * itself at about 550 probes/s. More waiting probes mean larger batches but longer turns of the
 * event loop, which every read waits through: at concurrency 64 (bench:scale, 20,000 resources)
 * 0 / 16 / 32 / 64 of them gave 2,490 / 2,575 / 2,941 / 2,982 probes/s with reads during the
 * backlog at p50 5.8 / 5.8 / 9.9 / 17.8 ms.
 */
const WAITING_FOR_BATCH = 16

/**
 * A probe's own step, nothing stored: the request under the outbound guard and `observe`'s reading
 * of the answer. Every probe is stored as an observation already; spans per request and per query
 * on top of it cost about a third of a probe's time and tell nothing more. What a target said
 * (details, challenge text) is redacted before it is stored or answered, as every outside text is.
 */
export const probeStep = (config: Config) => {
  const redactor = redactorFor(config)
  const sessions = mcpSessions(config)
  return (target: ProbeTarget) =>
    (target.mcp === undefined ? observe(target, config) : observeMcp({ ...target, mcp: target.mcp }, config, sessions)).pipe(
      Effect.map((observed): Observed => ({ ...observed, observation: redactor.value(observed.observation), challenge: redactor.value(observed.challenge) })),
      Effect.withTracerEnabled(false)
    )
}

/** A catalog resource is always probed with its catalog method: a caller never picks it (docs/trust.md). */
const targetOf = (record: ResourceRecord): ProbeTarget => ({
  resourceId: record.resource.id,
  url: record.resource.url,
  method: record.resource.method,
  advertised: record.paymentOptions,
  mcp: record.resource.mcp
})

const make = Effect.gen(function* () {
  const config = yield* AppConfig
  const catalogWrites = yield* CatalogWritesRepo
  const listings = yield* ResourceListingRepo
  const reads = yield* ResourceReadsRepo
  const observations = yield* ObservationsRepo
  const recorder = yield* EvidenceRecorder
  const schedule = yield* ProbeScheduleRepo
  const intervalMs = config.probes.intervalSeconds * 1000
  const instruments = yield* Instruments

  const run = probeStep(config)

  /** Records the probe in its batch's transaction, with the listing rule and `claim` (the schedule's next due time) there too. */
  const result = (record: ResourceRecord, observed: Observed, discovered: boolean, claim?: ProbeBookkeeping["claim"]) =>
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
    claim?: ProbeBookkeeping["claim"],
    request: <A, E, R>(step: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> = identity
  ) =>
    Effect.zipRight(
      recorder.beginProbe(record),
      Effect.flatMap(request(run(targetOf(record))), (observed) => result(record, observed, false, claim))
    )

  /** Catalog resources a caller's validation is probing now (this process): one at a time each. */
  const validating = yield* Ref.make<ReadonlySet<ResourceId>>(new Set())

  const tooMany = (record: ResourceRecord, retryAfterSeconds: number, why: string) =>
    new RateLimited({
      message: `${record.resource.id} is a catalog resource: ${why}; every validation answered 200 is recorded, so callers may add ` +
        `${config.probes.validationsPerInterval} observation(s) per probe interval (${config.probes.intervalSeconds} s) beside the schedule's ` +
        `(probes.validationsPerInterval); retry in ${retryAfterSeconds} s`,
      retryAfterSeconds
    })

  /**
   * A caller's probe of a catalog resource (`/v1/validate`): with its catalog method (another
   * method is a 400), and always recorded, as the schedule's probes are. Callers may add
   * `probes.validationsPerInterval` observations per probe interval beside the schedule's one
   * (`validationRetryAfter`; by default one, so they can never outweigh it); a validation beyond that is 429 `RATE_LIMITED` with `Retry-After`, never a
   * probe answered and silently dropped. One validation of a resource runs at a time (a second
   * meanwhile is 429 too), so concurrent callers cannot all pass the check before any records.
   */
  const probeAdHoc = (record: ResourceRecord, method: HttpMethod | undefined) =>
    Effect.gen(function* () {
      if (method !== undefined && method !== record.resource.method) {
        return yield* Effect.fail(
          new InvalidRequest({
            message: `method: ${record.resource.id} is a catalog resource, probed with its catalog method ${record.resource.method}, not ${method}`
          })
        )
      }
      const id = record.resource.id
      const claimed = yield* Ref.modify(validating, (set) => (set.has(id) ? [false, set] : [true, new Set(set).add(id)]))
      if (!claimed) return yield* Effect.fail(tooMany(record, 1, "another validation of it is in progress"))
      return yield* Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        const perInterval = config.probes.validationsPerInterval
        const newest = (yield* observations.page(id, perInterval + 1, null)).observations.map((o) => Date.parse(o.observedAt))
        const retryAfter = validationRetryAfter(newest, nowMs, intervalMs, perInterval)
        if (retryAfter !== null) {
          return yield* Effect.fail(tooMany(record, retryAfter, `it was observed ${perInterval + 1} times in the last probe interval`))
        }
        return yield* probeRecord(record)
      }).pipe(Effect.ensuring(Ref.update(validating, (set) => {
        const next = new Set(set)
        next.delete(id)
        return next
      })))
    })

  /** Requests in flight at once per lane: strangers' entries get their own, smaller share. */
  const concurrencyOf = (lane: ProbeLane) => (lane === "trusted" ? config.probes.concurrency : config.ingestion.concurrency)

  /**
   * Probes each record (completing its claim, if any), logging a store failure (a defect) and
   * answering null for it: a batch goes on without it. At most `concurrency` requests are in
   * flight, and up to WAITING_FOR_BATCH more probes wait for their batch to commit.
   */
  const probeAll = (
    items: ReadonlyArray<{ readonly record: ResourceRecord; readonly claim?: ProbeBookkeeping["claim"] }>,
    concurrency = config.probes.concurrency
  ) =>
    Effect.flatMap(requestSlots(concurrency), ({ run: request }) =>
      Effect.forEach(
        items,
        ({ record, claim }) =>
          probeRecord(record, claim, request).pipe(
            Effect.map((r) => r.outcome),
            Effect.catchAllCause((cause) => Effect.logWarning(`probe of ${record.resource.id} not recorded`, cause).pipe(Effect.as(null)))
          ),
        { concurrency: concurrency + WAITING_FOR_BATCH }
      )
    )

  /**
   * Retention, in statements of PRUNE_BATCH rows with the event loop let in between them, so a
   * backlog never stalls the service: raw observations past `rawRetentionHours`, hourly rollups
   * past `retentionDays`. Each statement commits durable against a process crash only: a delete a
   * power cut takes back is made again by the next pass, and an fsync per statement would block
   * the loop as long as the delete.
   */
  const prune = commitWithoutFlush(Effect.gen(function* () {
    const nowMs = yield* Clock.currentTimeMillis
    const inBatches = (step: Effect.Effect<number>) =>
      Effect.iterate(
        { total: 0, last: PRUNE_BATCH },
        {
          while: (s) => s.last === PRUNE_BATCH,
          body: (s) => Effect.map(Effect.zipLeft(step, letIoIn), (n) => ({ total: s.total + n, last: n }))
        }
      ).pipe(Effect.map((s) => s.total))
    const pruned = yield* inBatches(observations.pruneRaw(nowMs - config.probes.rawRetentionHours * 3_600_000, PRUNE_BATCH))
    const rollupsBefore = nowMs - config.probes.retentionDays * 86_400_000
    yield* Effect.iterate(
      { next: "" as string | null },
      {
        while: (s) => s.next !== null,
        body: (s) => Effect.zipLeft(observations.pruneRollups(rollupsBefore, s.next!, PRUNE_RESOURCES, PRUNE_BATCH), letIoIn)
      }
    )
    // Unlisted resources `/v1/validate` created that nobody validated within unlistedRetentionHours go too,
    // and so do untrusted entries unhealthy for retireAfterHours.
    const prunedUnlisted = yield* listings.pruneUnlisted(nowMs - config.verification.unlistedRetentionHours * 3_600_000)
    const retired = yield* listings.retireUnhealthy(nowMs - config.ingestion.retireAfterHours * 3_600_000)
    return { pruned, prunedUnlisted, retired }
  }))

  /** A URL the catalog does not list, probed once under its future id; a refused target fails before any traffic. */
  const observeNewUrl = (url: URL, method: HttpMethod, mcp?: McpTool) =>
    Effect.gen(function* () {
      yield* guardTarget(url.href, config.probes).pipe(Effect.catchTag("DnsFailure", () => Effect.void))
      return yield* run({ resourceId: idOf(url, mcp), url: url.href, method, advertised: [], mcp })
    })

  /** Creates the row for a URL from what its probe saw (listed or not, from `source`), then records the observation. */
  const adopt = (url: URL, method: HttpMethod, observed: Observed, source: string, listed: boolean, change: ListingChange, mcp?: McpTool) =>
    Effect.gen(function* () {
      const id = idOf(url, mcp)
      const entry = discoveredEntry(id, url, method, observed, config, mcp)
      yield* listed ? catalogWrites.upsertListed(entry, source, change) : catalogWrites.insertUnlisted(entry, source, change)
      const record = Option.getOrThrow(yield* reads.get(id))
      return yield* result(record, observed, true)
    })

  /**
   * A URL the catalog does not list: a refused target never becomes a row; anything else is probed
   * once, then stored unlisted (source "validate") with the observation recorded against it.
   */
  const probeNewUrl = (url: URL, method: HttpMethod) =>
    Effect.flatMap(observeNewUrl(url, method), (observed) =>
      adopt(url, method, observed, "validate", false, {
        actor: "validate",
        reason: "probed through /v1/validate; not in the catalog, so unlisted until an operator or a source lists it"
      })
    )

  return {
    /**
     * Ingestion's two steps for a URL the catalog does not list (registration): probe it without
     * storing anything, then, if the caller keeps it, `adopt` it as a row of its source.
     */
    observeNewUrl,
    adopt,

    /** Probes a catalog resource now, as the schedule does, and records the observation (`sextant probe <id>`). */
    probeResource: (resourceId: ResourceId): Effect.Effect<ProbeResult, NotFound> =>
      Effect.gen(function* () {
        const found = yield* reads.get(resourceId)
        if (Option.isNone(found)) return yield* Effect.fail(notFound("resource", resourceId))
        return yield* probeRecord(found.value)
      }).pipe(Effect.withSpan("Prober.probeResource")),

    /** A caller's probe of a catalog resource (`/v1/validate {resourceId}`); see probeAdHoc. */
    validateResource: (resourceId: ResourceId, method?: HttpMethod): Effect.Effect<ProbeResult, NotFound | InvalidRequest | RateLimited> =>
      Effect.gen(function* () {
        const found = yield* reads.get(resourceId)
        if (Option.isNone(found)) return yield* Effect.fail(notFound("resource", resourceId))
        return yield* probeAdHoc(found.value, method)
      }).pipe(Effect.withSpan("Prober.validateResource")),

    /**
     * Probes any URL (`/v1/validate`): a catalog URL is probed as that resource; an unknown one
     * becomes an unlisted resource (source "validate"). Fails with OutboundTargetRefused for a URL the outbound guard forbids.
     */
    probeUrl: (rawUrl: string, method?: HttpMethod): Effect.Effect<ProbeResult, OutboundTargetRefused | InvalidRequest | RateLimited> =>
      Effect.gen(function* () {
        let url: URL
        try {
          url = new URL(rawUrl)
        } catch {
          return yield* new OutboundTargetRefused({ reason: `"${rawUrl}" is not an absolute URL` })
        }
        const known = yield* reads.findByUrl(url.href)
        if (Option.isSome(known)) return yield* probeAdHoc(known.value, method)
        return yield* probeNewUrl(url, method ?? "GET")
      }).pipe(Effect.withSpan("Prober.probeUrl")),

    prune,

    /**
     * Gives every probe target a due time (a new one is due at once) and forgets resources that
     * stopped being targets; the scheduler runs it at start and once per interval. It walks the
     * ids SYNC_PAGE at a time with the event loop let in between: the whole catalog at once held
     * every request for about 0.2 s at 100,000 resources.
     */
    syncSchedule: Effect.gen(function* () {
      const nowMs = yield* Clock.currentTimeMillis
      const total = { added: 0, removed: 0 }
      for (let afterId: string | null = ""; afterId !== null; ) {
        const ids: ReadonlyArray<{ readonly id: ResourceId; readonly lane: ProbeLane }> = yield* listings.probeTargetIds(afterId, SYNC_PAGE)
        const upTo = ids.length === SYNC_PAGE ? ids[ids.length - 1]!.id : null
        const page = yield* schedule.sync(ids, nowMs, afterId, upTo)
        total.added += page.added
        total.removed += page.removed
        afterId = upTo
        if (afterId !== null) yield* letIoIn
      }
      return total
    }),

    /**
     * Claims up to `limit` resources of `lane` that are due, as `owner`, probes them (at most the
     * lane's concurrency at once) and sets each one's next due time (its next slot, `nextDue`; an
     * unhealthy untrusted entry's backs off, `backoffIntervals`) in the probe's own batch
     * transaction. Answers how many were claimed.
     */
    runDue: (owner: string, limit: number, lane: ProbeLane = "trusted") =>
      Effect.gen(function* () {
        const nowMs = yield* Clock.currentTimeMillis
        const claims = yield* schedule.claim(owner, nowMs, limit, config.probes.leaseSeconds * 1000, lane)
        if (claims.length === 0) return 0
        const ids = claims.map((c) => c.resourceId)
        const records = new Map((yield* reads.getMany(ids)).map((r) => [r.resource.id, r] as const))
        const unhealthy = lane === "open" ? yield* listings.unhealthySince(ids) : new Map<string, number>()
        const next = (resourceId: ResourceId) =>
          nextDue(resourceId, nowMs, intervalMs * backoffIntervals(unhealthy.get(resourceId), nowMs, intervalMs, config.ingestion.maxBackoffIntervals))
        // A claim whose resource is gone is completed without a probe.
        const gone = claims.filter((c) => !records.has(c.resourceId)).map((c) => ({ resourceId: c.resourceId, nextDueMs: next(c.resourceId) }))
        yield* Effect.zipRight(
          gone.length === 0 ? Effect.void : schedule.complete(owner, gone),
          probeAll(
            claims.flatMap((c) => {
              const record = records.get(c.resourceId)
              return record === undefined ? [] : [{ record, claim: { owner, nextDueMs: next(c.resourceId) } }]
            }),
            concurrencyOf(lane)
          )
        ).pipe(
          // Stopping mid-batch: what was not probed is due at once for any instance still running.
          Effect.onInterrupt(() => Effect.ignore(schedule.release(claims.map((c) => c.resourceId), owner)))
        )
        return claims.length
      }),

    /**
     * One pass over the whole catalog now (`sextant probe`), at most `probes.concurrency` probes at
     * once, each bounded by `probes.timeoutMs`; then retention is applied (see `prune`).
     */
    runCycle: Effect.gen(function* () {
      const startMs = yield* Clock.currentTimeMillis
      const records = yield* reads.probeTargets()
      const outcomes = yield* probeAll(records.map((record) => ({ record })))
      const { pruned, prunedUnlisted, retired } = yield* prune
      const endMs = yield* Clock.currentTimeMillis
      return {
        startedAt: new Date(startMs).toISOString(),
        durationMs: endMs - startMs,
        probed: records.length,
        healthy: outcomes.filter((o) => o === "healthy").length,
        unrecorded: outcomes.filter((o) => o === null).length,
        pruned,
        prunedUnlisted,
        retired
      } satisfies CycleReport
    }).pipe(Effect.withSpan("Prober.runCycle"))
  } satisfies ProberShape
})
