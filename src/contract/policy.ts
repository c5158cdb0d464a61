import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { NotFound } from "../domain/errors.js"
import { PolicyEvaluateRequest, PolicyEvaluation } from "../domain/policy.js"
import { RouteDecision, RouteRequest } from "../domain/routes.js"
import { failsWith, strict } from "./parse.js"

/** Routing and policy evaluation; open to anyone (SPEC Authentication 1). */
export class PolicyApi extends HttpApiGroup.make("policy")
  .add(
    HttpApiEndpoint.post("evaluate", "/v1/policies/evaluate")
      .setPayload(strict(PolicyEvaluateRequest))
      .addSuccess(PolicyEvaluation)
      .pipe(failsWith(NotFound))
  )
  .add(HttpApiEndpoint.post("route", "/v1/routes").setPayload(strict(RouteRequest)).addSuccess(RouteDecision)) {}
