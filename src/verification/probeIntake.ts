import { Effect, Option } from "effect"
import { AppConfig } from "../config.js"
import { notFound } from "../domain/errors.js"
import type { ResourceId } from "../domain/ids.js"
import type { McpTool } from "../domain/mcp.js"
import type { HttpMethod } from "../domain/resources.js"
import { guardTarget, OutboundTargetRefused } from "../outbound/outboundGuard.js"
import { CatalogWritesRepo } from "../store/CatalogWritesRepo.js"
import type { ListingChange } from "../store/listingChanges.js"
import { ResourceReadsRepo } from "../store/ResourceReadsRepo.js"
import { discoveredEntry, discoveredIdOf } from "./discoveredEntry.js"
import type { Observed } from "./observe.js"
import type { ProberShape } from "./Prober.js"
import type { ProbeRecording } from "./probeRecording.js"
import { makeProbeValidation } from "./probeValidation.js"

type Intake = Pick<ProberShape, "observeNewUrl" | "adopt" | "probeResource" | "validateResource" | "probeUrl">

/**
 * The prober's intake: what callers hand it (a catalog resource to probe now, a URL to validate,
 * a URL registration found), as opposed to what the schedule claims.
 */
export const makeProbeIntake = (recording: ProbeRecording) =>
  Effect.gen(function* () {
    const config = yield* AppConfig
    const catalogWrites = yield* CatalogWritesRepo
    const reads = yield* ResourceReadsRepo
    const validate = yield* makeProbeValidation(recording)

    const observeNewUrl = (url: URL, method: HttpMethod, mcp?: McpTool) =>
      Effect.gen(function* () {
        yield* guardTarget(url.href, config.probes).pipe(Effect.catchTag("DnsFailure", () => Effect.void))
        return yield* recording.run({
          resourceId: discoveredIdOf(url, mcp),
          url: url.href,
          method,
          advertised: [],
          mcp
        })
      })

    const adopt = (
      url: URL,
      method: HttpMethod,
      observed: Observed,
      source: string,
      listed: boolean,
      change: ListingChange,
      mcp?: McpTool
    ) =>
      Effect.gen(function* () {
        const id = discoveredIdOf(url, mcp)
        const entry = discoveredEntry(id, url, method, observed, config, mcp)
        yield* listed
          ? catalogWrites.upsertListed(entry, source, change)
          : catalogWrites.insertUnlisted(entry, source, change)
        const record = Option.getOrThrow(yield* reads.get(id))
        return yield* recording.result(record, observed, true)
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

    const catalogRecord = (resourceId: ResourceId) =>
      Effect.flatMap(
        reads.get(resourceId),
        Option.match({
          onNone: () => Effect.fail(notFound("resource", resourceId)),
          onSome: Effect.succeed
        })
      )

    return {
      observeNewUrl,
      adopt,
      probeResource: (resourceId) =>
        Effect.flatMap(catalogRecord(resourceId), (record) => recording.probeRecord(record)).pipe(
          Effect.withSpan("Prober.probeResource")
        ),
      validateResource: (resourceId, method) =>
        Effect.flatMap(catalogRecord(resourceId), (record) => validate(record, method)).pipe(
          Effect.withSpan("Prober.validateResource")
        ),
      probeUrl: (rawUrl, method) =>
        Effect.gen(function* () {
          let url: URL
          try {
            url = new URL(rawUrl)
          } catch {
            return yield* new OutboundTargetRefused({ reason: `"${rawUrl}" is not an absolute URL` })
          }
          const known = yield* reads.findByUrl(url.href)
          if (Option.isSome(known)) return yield* validate(known.value, method)
          return yield* probeNewUrl(url, method ?? "GET")
        }).pipe(Effect.withSpan("Prober.probeUrl"))
    } satisfies Intake
  })
