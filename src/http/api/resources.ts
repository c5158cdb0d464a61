import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ResourceDetail, ResourceList, SearchResponse } from "../../domain/catalog.js"
import { NotFound } from "../../domain/errors.js"
import { ResourceSearchRequest } from "../../domain/resources.js"
import { failsWith, strict } from "./parse.js"

export const IdPath = Schema.Struct({ id: Schema.String })

/** Discovery; open to anyone (SPEC Authentication 1). */
export class ResourcesApi extends HttpApiGroup.make("resources")
  .add(HttpApiEndpoint.get("list", "/v1/resources").addSuccess(ResourceList))
  .add(HttpApiEndpoint.get("get", "/v1/resources/:id").setPath(IdPath).addSuccess(ResourceDetail).pipe(failsWith(NotFound)))
  .add(
    HttpApiEndpoint.post("search", "/v1/search")
      .setPayload(strict(ResourceSearchRequest))
      .addSuccess(SearchResponse)
      
  ) {}
