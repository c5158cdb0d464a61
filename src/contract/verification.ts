import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { NotFound, RateLimited, TargetRefused } from "../domain/errors.js"
import { ResourceMetrics } from "../domain/metrics.js"
import { ObservationPage, ProbeResult, ResourceHistory, ValidateRequest } from "../domain/observations.js"
import { Cursor, PAGE_LIMITS } from "../domain/pagination.js"
import { ApiKeyAuth } from "./auth.js"
import { allIssues, failsWith, queryInstant, queryInt, strict } from "./parse.js"
import { ResourceIdPath } from "./resources.js"

export const ObservationsQuery = Schema.Struct({
  limit: Schema.optional(queryInt({ minimum: 1, maximum: PAGE_LIMITS.observations.max })),
  /** nextCursor of the previous page. */
  cursor: Schema.optional(Cursor),
  /** `nextBefore` of the previous page (an observation id) or an ISO date-time: observations older than it; anything else is 400. */
  before: Schema.optional(
    Schema.String.annotations({
      jsonSchema: {
        anyOf: [
          { type: "string", pattern: "^obs_\\d{15}_[0-9a-f]{12}$" },
          { type: "string", format: "date-time" }
        ]
      }
    })
  )
})

/** A span of hours: those starting at or after `from` and before `to`, at most `probes.retentionDays` apart. */
export const HistoryQuery = Schema.Struct({
  /** Default: a day before `to`. */
  from: Schema.optional(queryInstant),
  /** Default: now. */
  to: Schema.optional(queryInstant)
})

/**
 * Evidence: on-demand probes (they send traffic to third parties, so they take an API key when keys
 * exist) and the open read side: metrics, raw observations and hourly history.
 */
export class VerificationApi extends HttpApiGroup.make("verification")
  .add(
    HttpApiEndpoint.post("validate", "/v1/validate")
      .setPayload(strict(ValidateRequest))
      .addSuccess(ProbeResult)
      .pipe(failsWith(NotFound, TargetRefused, RateLimited))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("metrics", "/v1/resources/:id/metrics")
      .setPath(ResourceIdPath)
      .addSuccess(ResourceMetrics)
      .pipe(failsWith(NotFound))
  )
  .add(
    HttpApiEndpoint.get("observations", "/v1/resources/:id/observations")
      .setPath(ResourceIdPath)
      .setUrlParams(allIssues(ObservationsQuery))
      .addSuccess(ObservationPage)
      .pipe(failsWith(NotFound))
  )
  .add(
    HttpApiEndpoint.get("history", "/v1/resources/:id/history")
      .setPath(ResourceIdPath)
      .setUrlParams(allIssues(HistoryQuery))
      .addSuccess(ResourceHistory)
      .pipe(failsWith(NotFound))
      .annotate(
        OpenApi.Description,
        "The resource's probes hour by hour, oldest first: each hour with probes that starts at or after `from` and before `to`. " +
          "`to` defaults to now and `from` to a day before `to`; `from` must be before `to` and at most `probes.retentionDays` days before it (400 INVALID_REQUEST otherwise)."
      )
  ) {}
