import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context } from "effect"
import { Unauthorized } from "../domain/errors.js"

/** Who is calling: the API key's principal, or null in open local mode (settlement then uses the payer). */
export class Principal extends Context.Tag("sextant/Principal")<Principal, { readonly id: string | null }>() {}

/**
 * Bearer API keys for the endpoints that spend or reveal operator state. Open when no keys are
 * configured (the default local mode); otherwise 401 without a key whose sha256 is listed.
 */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("ApiKeyAuth", {
  failure: Unauthorized,
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}
