import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { RateLimited, TargetRefused } from "../domain/errors.js"
import { RegistrationRequest, RegistrationResponse } from "../domain/registration.js"
import { ApiKeyAuth } from "./auth.js"
import { failsWith, strict } from "./parse.js"

/**
 * Registration by origin or URL. It sends probes to third parties and writes to the catalog, so it
 * takes an API key when keys are configured, like `/v1/validate`; open in the default local mode.
 */
export class RegistrationApi extends HttpApiGroup.make("registration").add(
  HttpApiEndpoint.post("register", "/v1/resources/register")
    .setPayload(strict(RegistrationRequest))
    .addSuccess(RegistrationResponse)
    .pipe(failsWith(TargetRefused, RateLimited))
    .middleware(ApiKeyAuth)
) {}
