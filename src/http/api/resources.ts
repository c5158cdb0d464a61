import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { BadRequest, NotFound } from "../../domain/errors.js"
import { ResourceMetrics } from "../../domain/metrics.js"
import { StatusTransition } from "../../domain/observations.js"
import { ResourceRecord, ResourceSearchRequest } from "../../domain/resources.js"
import { strict } from "./parse.js"

export const ResourceList = Schema.Struct({ resources: Schema.Array(ResourceRecord) }).annotations({
  identifier: "ResourceList"
})

export const ResourceDetail = Schema.Struct({
  ...ResourceRecord.fields,
  metrics: ResourceMetrics,
  transitions: Schema.Array(StatusTransition)
}).annotations({ identifier: "ResourceDetail" })
export type ResourceDetail = typeof ResourceDetail.Type

export const SearchHit = Schema.Struct({
  ...ResourceRecord.fields,
  metrics: ResourceMetrics,
  /** Text relevance of `query` (0 when no query was given); results are ordered by it, then id. */
  relevance: Schema.Number
}).annotations({ identifier: "SearchHit" })
export type SearchHit = typeof SearchHit.Type

export const SearchResponse = Schema.Struct({
  resources: Schema.Array(SearchHit),
  count: Schema.Int
}).annotations({ identifier: "SearchResponse" })

export const IdPath = Schema.Struct({ id: Schema.String })

/** Discovery; open to anyone (SPEC Authentication 1). */
export class ResourcesApi extends HttpApiGroup.make("resources")
  .add(HttpApiEndpoint.get("list", "/v1/resources").addSuccess(ResourceList))
  .add(HttpApiEndpoint.get("get", "/v1/resources/:id").setPath(IdPath).addSuccess(ResourceDetail).addError(NotFound))
  .add(
    HttpApiEndpoint.post("search", "/v1/search")
      .setPayload(strict(ResourceSearchRequest))
      .addSuccess(SearchResponse)
      .addError(BadRequest)
  ) {}
