import type { HttpApiEndpoint } from "@effect/platform"
import type { Schema } from "effect"

/**
 * Request bodies report every failing field and reject unknown ones (HttpApi defaults to the first
 * issue and silently drops extras).
 */
export const strict = <S extends Schema.Schema.Any>(schema: S): S =>
  schema.annotations({ parseOptions: { errors: "all", onExcessProperty: "error" } }) as S

/**
 * Every issue reported, unknown fields kept: for stock x402 bodies, which are forwarded as the
 * buyer signed them (a newer client's extra fields must reach the facilitator), and for query
 * strings, where clients add their own parameters.
 */
export const allIssues = <S extends Schema.Schema.Any>(schema: S): S =>
  schema.annotations({ parseOptions: { errors: "all" } }) as S

/**
 * Declares what an endpoint can fail with: HttpApi encodes each error with the status its class
 * carries, and the OpenAPI document lists every code under its status.
 */
export const failsWith =
  <const Errors extends ReadonlyArray<Schema.Schema.Any>>(...errors: Errors) =>
  <Endpoint extends HttpApiEndpoint.HttpApiEndpoint.Any>(
    endpoint: Endpoint
  ): HttpApiEndpoint.HttpApiEndpoint.AddError<Endpoint, Schema.Schema.Type<Errors[number]>, Schema.Schema.Context<Errors[number]>> =>
    errors.reduce((declared: any, error) => declared.addError(error), endpoint)
