import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { PreflightAnswer, PreflightRequest } from "../domain/preflight.js"
import { strict } from "./parse.js"

/**
 * A payment a client is about to make, judged on what probes observed of its URL and origin; open
 * to anyone, as policy evaluation is (SPEC Authentication 1). Unknown URLs are judged too, never
 * a 404.
 */
export class PreflightApi extends HttpApiGroup.make("preflight").add(
  HttpApiEndpoint.post("preflight", "/v1/preflight")
    .setPayload(strict(PreflightRequest))
    .addSuccess(PreflightAnswer)
    .annotate(
      OpenApi.Description,
      "ALLOW, WARN or DENY for a payment about to be made (the 402 challenge or the chosen requirements, and the URL), with reason codes and the evidence behind each: the payees the URL's and origin's probes observed, the price against the advertised and observed one, status, level, reliability, freshness, quarantines and the buyer policy's limits."
    )
) {}
