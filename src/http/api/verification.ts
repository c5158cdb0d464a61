import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { NotFound, TargetRefused } from "../../domain/errors.js"
import { ResourceMetrics } from "../../domain/metrics.js"
import { ObservationPage, ProbeResult, ValidateRequest } from "../../domain/observations.js"
import { Cursor, PAGE_LIMITS } from "../../domain/pagination.js"
import { ApiKeyAuth } from "../auth.js"
import { allIssues, failsWith, strict } from "./parse.js"
import { IdPath } from "./resources.js"

export const ObservationsQuery = Schema.Struct({
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, PAGE_LIMITS.observations.max))),
  /** nextCursor of the previous page. */
  cursor: Schema.optional(Cursor),
  /** An observation id (nextBefore) or an ISO date-time: observations older than it. */
  before: Schema.optional(Schema.String)
})

/**
 * Evidence: on-demand probes (they send traffic to third parties, so they take an API key when keys
 * exist) and the open read side, metrics and raw observations.
 */
export class VerificationApi extends HttpApiGroup.make("verification")
  .add(
    HttpApiEndpoint.post("validate", "/v1/validate")
      .setPayload(strict(ValidateRequest))
      .addSuccess(ProbeResult)
      .pipe(failsWith(NotFound, TargetRefused))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.get("metrics", "/v1/resources/:id/metrics")
      .setPath(IdPath)
      .addSuccess(ResourceMetrics)
      .pipe(failsWith(NotFound))
  )
  .add(
    HttpApiEndpoint.get("observations", "/v1/resources/:id/observations")
      .setPath(IdPath)
      .setUrlParams(allIssues(ObservationsQuery))
      .addSuccess(ObservationPage)
      .pipe(failsWith(NotFound))
  ) {}
