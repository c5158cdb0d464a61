import type { HttpApiEndpoint } from "@effect/platform"
import { Schema } from "effect"
import { type ApiErrorClass, wire } from "../domain/errors.js"

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
 * carries (its body without the tag, `wire`), and the OpenAPI document lists every code under its status.
 */
export const failsWith =
  <const Errors extends ReadonlyArray<ApiErrorClass>>(...errors: Errors) =>
  <Endpoint extends HttpApiEndpoint.HttpApiEndpoint.Any>(
    endpoint: Endpoint
  ): HttpApiEndpoint.HttpApiEndpoint.AddError<Endpoint, Schema.Schema.Type<Errors[number]>, never> =>
    failsWithBodies(...errors.map(wire))(endpoint) as any

/** Declares error bodies that are schemas of their own (the x402 endpoints' combined refusals). */
export const failsWithBodies =
  <const Errors extends ReadonlyArray<Schema.Schema.Any>>(...errors: Errors) =>
  <Endpoint extends HttpApiEndpoint.HttpApiEndpoint.Any>(
    endpoint: Endpoint
  ): HttpApiEndpoint.HttpApiEndpoint.AddError<
    Endpoint,
    Schema.Schema.Type<Errors[number]>,
    Schema.Schema.Context<Errors[number]>
  > =>
    errors.reduce((declared: any, error) => declared.addError(error), endpoint)

/**
 * An integer query parameter within bounds. It arrives as text, so its schema is a transformation
 * from a string, and the OpenAPI document would describe it as a plain string: the annotation
 * makes the document say what the server accepts (an integer within the bounds), so a client
 * generated from the document sends values the server takes. Without a maximum of its own it is
 * still a safe integer (`Schema.int` refuses 2^53 and beyond), and the document says so.
 */
export const queryInt = ({
  minimum,
  maximum = Number.MAX_SAFE_INTEGER
}: {
  readonly minimum: number
  readonly maximum?: number
}) =>
  Schema.NumberFromString.pipe(Schema.int(), Schema.between(minimum, maximum)).annotations({
    jsonSchema: { type: "integer", minimum, maximum },
    description: `an integer from ${minimum} to ${maximum}`
  })

/** An ISO 8601 date-time query parameter (a page cursor), described as such in the document. */
export const queryDateTime = Schema.String.pipe(
  Schema.filter((s) => !Number.isNaN(Date.parse(s)), { message: () => "expected an ISO date-time" })
).annotations({ jsonSchema: { type: "string", format: "date-time" } })

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i

/** A real calendar instant: Date.parse takes 2024-02-30 as March 1st, so the day is checked too. */
const isInstant = (s: string) => {
  const m = RFC3339.exec(s)
  if (m === null || Number.isNaN(Date.parse(s))) return false
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

/**
 * An RFC 3339 date-time query parameter with its offset (`2025-01-31T12:00:00Z`), exactly what
 * the document's `format: date-time` names: a bound of a time span, where the lenient
 * `queryDateTime` would read "1" as 2001 and a time without an offset in the server's zone.
 */
export const queryInstant = Schema.String.pipe(
  Schema.filter(isInstant, {
    message: () => "expected an RFC 3339 date-time with an offset, e.g. 2025-01-31T12:00:00Z"
  })
).annotations({
  jsonSchema: { type: "string", format: "date-time" },
  arbitrary: () => (fc) =>
    fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((d) => d.toISOString())
})
