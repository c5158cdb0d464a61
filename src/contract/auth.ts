import { HttpApiMiddleware, HttpApiSecurity } from "@effect/platform"
import { Context, Effect } from "effect"
import { OperatorOnly, Unauthorized, wire } from "../domain/errors.js"
import type { PrincipalId } from "../domain/ids.js"

/**
 * Who is calling: the API key's principal and its role, or a null id in open local mode
 * (settlement then uses the payer).
 */
export class Principal extends Context.Tag("sextant/Principal")<
  Principal,
  { readonly id: PrincipalId | null; readonly role: "operator" | "buyer" }
>() {}

/**
 * The author of a curation: an operator key's principal. Open mode is refused too, since a change
 * nobody can be named for is not one an operator can answer for (docs/decisions.md).
 */
export const operatorPrincipal = Effect.flatMap(Principal, (principal) =>
  principal.id === null
    ? new OperatorOnly({
        message:
          'curation needs an operator API key, and no API keys are configured (open mode): add an apiKeys entry with role "operator"'
      })
    : principal.role !== "operator"
      ? new OperatorOnly({
          message: `principal "${principal.id}" has role ${principal.role}; curation needs an API key whose role is operator`
        })
      : Effect.succeed(principal.id)
)

/**
 * Bearer API keys for the endpoints that spend or reveal operator state. Open when no keys are
 * configured (the default local mode); otherwise 401 without a key whose sha256 is listed.
 */
export class ApiKeyAuth extends HttpApiMiddleware.Tag<ApiKeyAuth>()("ApiKeyAuth", {
  failure: wire(Unauthorized),
  provides: Principal,
  security: { bearer: HttpApiSecurity.bearer }
}) {}
