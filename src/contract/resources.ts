import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ResourceDetail, ResourceList, SearchResponse } from "../domain/catalog.js"
import { NotFound, RateLimited } from "../domain/errors.js"
import { ResourceId } from "../domain/ids.js"
import { Cursor, PAGE_LIMITS } from "../domain/pagination.js"
import { ResourceSearchRequest } from "../domain/resources.js"
import { allIssues, failsWith, queryInt, strict } from "./parse.js"

export const ResourceIdPath = Schema.Struct({ id: ResourceId })

/** `limit` and `cursor` of `GET /v1/resources`; numbers arrive as text, a bad one is INVALID_REQUEST naming it. */
export const ResourcesQuery = allIssues(
  Schema.Struct({
    limit: Schema.optional(queryInt({ minimum: 1, maximum: PAGE_LIMITS.resources.max })),
    cursor: Schema.optional(Cursor)
  })
)

/** Discovery; open to anyone (SPEC Authentication 1). */
export class ResourcesApi extends HttpApiGroup.make("resources")
  .add(HttpApiEndpoint.get("list", "/v1/resources").setUrlParams(ResourcesQuery).addSuccess(ResourceList))
  .add(
    HttpApiEndpoint.get("get", "/v1/resources/:id")
      .setPath(ResourceIdPath)
      .addSuccess(ResourceDetail)
      .pipe(failsWith(NotFound))
  )
  .add(
    HttpApiEndpoint.post("search", "/v1/search")
      .setPayload(strict(ResourceSearchRequest))
      .addSuccess(SearchResponse)
      .pipe(failsWith(RateLimited))
  ) {}
