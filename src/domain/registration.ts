import { Schema } from "effect"
import { ResourceId } from "./ids.js"
import { HttpMethod } from "./resources.js"

/** `POST /v1/resources/register`: an origin to read for routes, one route URL, or (`type: "mcp"`) an MCP server's endpoint. */
export const RegistrationRequest = Schema.Struct({
  origin: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  url: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
  /** For `url`: the method to probe with (GET by default). */
  method: Schema.optional(HttpMethod),
  /** For `url`: `mcp` reads the server's tools (tools/list) and probes each; `http` by default. */
  type: Schema.optional(Schema.Literal("http", "mcp"))
}).annotations({ identifier: "RegistrationRequest" })
export type RegistrationRequest = typeof RegistrationRequest.Type

/**
 * What registration made of one route:
 * - `listed`: answered a valid 402 for this deployment's network and asset; now listed.
 * - `already-cataloged`: the catalog has the URL already; it was probed, its listing left alone.
 * - `not-402`: answered, but not 402. `invalid-challenge`: a 402 without a decodable x402 challenge.
 * - `wrong-network` / `wrong-asset`: a challenge with no option this deployment can pay.
 * - `unreachable`: no answer (connection, DNS or timeout). `refused`: the outbound guard refused it.
 * - `skipped`: not probed (a templated path, another origin, or over the per-registration cap).
 */
export const RegistrationOutcome = Schema.Literal(
  "listed",
  "already-cataloged",
  "not-402",
  "invalid-challenge",
  "wrong-network",
  "wrong-asset",
  "unreachable",
  "refused",
  "skipped"
).annotations({ identifier: "RegistrationOutcome" })
export type RegistrationOutcome = typeof RegistrationOutcome.Type

/** Where a route was found. */
export const RouteOrigin = Schema.Literal("openapi", "well-known", "request", "tools/list")
export type RouteOrigin = typeof RouteOrigin.Type

export const RegisteredRoute = Schema.Struct({
  url: Schema.String,
  method: HttpMethod,
  foundIn: RouteOrigin,
  /** For an MCP server's route: the tool probed at `url`. */
  toolName: Schema.optional(Schema.String),
  outcome: RegistrationOutcome,
  /** The catalog id, when the route is (or already was) in the catalog. */
  resourceId: Schema.NullOr(ResourceId),
  detail: Schema.NullOr(Schema.String)
}).annotations({ identifier: "RegisteredRoute" })
export type RegisteredRoute = typeof RegisteredRoute.Type

/** Each discovery document read, in order, and what it gave. */
export const RegistrationDocument = Schema.Struct({
  url: Schema.String,
  /** Routes it named; null when it could not be read. */
  routes: Schema.NullOr(Schema.Int),
  detail: Schema.NullOr(Schema.String)
}).annotations({ identifier: "RegistrationDocument" })
export type RegistrationDocument = typeof RegistrationDocument.Type

export const RegistrationResponse = Schema.Struct({
  origin: Schema.String,
  documents: Schema.Array(RegistrationDocument),
  routes: Schema.Array(RegisteredRoute),
  listed: Schema.Int
}).annotations({ identifier: "RegistrationResponse" })
export type RegistrationResponse = typeof RegistrationResponse.Type
