import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { CurationResult, ReasonOptional, ReasonQuery, ReasonRequired } from "../domain/curation.js"
import { ConfigManaged, NotFound, OperatorOnly } from "../domain/errors.js"
import { ApiKeyAuth } from "./auth.js"
import { allIssues, failsWith, strict } from "./parse.js"
import { ResourceIdPath } from "./resources.js"

/**
 * Operator curation: an API key whose role is operator; a buyer key and open mode get 403
 * OPERATOR_ONLY, a missing or unknown key 401. Every change is stored with its actor and reason.
 */
export class CurationApi extends HttpApiGroup.make("curation")
  .add(
    HttpApiEndpoint.post("quarantine", "/v1/resources/:id/quarantine")
      .setPath(ResourceIdPath)
      .setPayload(strict(ReasonRequired))
      .addSuccess(CurationResult)
      .pipe(failsWith(OperatorOnly, NotFound))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.del("unquarantine", "/v1/resources/:id/quarantine")
      .setPath(ResourceIdPath)
      .setUrlParams(allIssues(ReasonQuery))
      .addSuccess(CurationResult)
      .pipe(failsWith(OperatorOnly, NotFound))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.post("list", "/v1/resources/:id/list")
      .setPath(ResourceIdPath)
      .setPayload(strict(ReasonOptional))
      .addSuccess(CurationResult)
      .pipe(failsWith(OperatorOnly, NotFound))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.post("unlist", "/v1/resources/:id/unlist")
      .setPath(ResourceIdPath)
      .setPayload(strict(ReasonRequired))
      .addSuccess(CurationResult)
      .pipe(failsWith(OperatorOnly, NotFound))
      .middleware(ApiKeyAuth)
  )
  .add(
    HttpApiEndpoint.del("delete", "/v1/resources/:id")
      .setPath(ResourceIdPath)
      .setUrlParams(allIssues(ReasonQuery))
      .addSuccess(CurationResult)
      .pipe(failsWith(OperatorOnly, NotFound, ConfigManaged))
      .middleware(ApiKeyAuth)
  ) {}
