import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { PolicyCode } from "./policy.js"

/**
 * Every non-2xx body is `{error, message}`: `error` is a stable machine code, `message` a sentence
 * for people. One class per HTTP status keeps the OpenAPI document honest about what each
 * endpoint can answer; the code inside says which case it was.
 */
const errorFields = { error: Schema.String, message: Schema.String }

export const ErrorBody = Schema.Struct(errorFields).annotations({ identifier: "ErrorBody" })
export type ErrorBody = typeof ErrorBody.Type

export class BadRequest extends Schema.Class<BadRequest>("BadRequest")(
  errorFields,
  HttpApiSchema.annotations({ status: 400 })
) {}

export class Unauthorized extends Schema.Class<Unauthorized>("Unauthorized")(
  errorFields,
  HttpApiSchema.annotations({ status: 401 })
) {}

export class PolicyDenied extends Schema.Class<PolicyDenied>("PolicyDenied")(
  { error: Schema.Literal("POLICY_DENIED"), code: PolicyCode, message: Schema.String },
  HttpApiSchema.annotations({ status: 403 })
) {}

export class NotFound extends Schema.Class<NotFound>("NotFound")(
  errorFields,
  HttpApiSchema.annotations({ status: 404 })
) {}

export class Conflict extends Schema.Class<Conflict>("Conflict")(
  errorFields,
  HttpApiSchema.annotations({ status: 409 })
) {}

export class Unprocessable extends Schema.Class<Unprocessable>("Unprocessable")(
  errorFields,
  HttpApiSchema.annotations({ status: 422 })
) {}

/** `retryAfterSeconds` is mirrored into a `Retry-After` header by the HTTP layer. */
export class TooManyRequests extends Schema.Class<TooManyRequests>("TooManyRequests")(
  { ...errorFields, retryAfterSeconds: Schema.Int },
  HttpApiSchema.annotations({ status: 429 })
) {}

export class BadGateway extends Schema.Class<BadGateway>("BadGateway")(
  errorFields,
  HttpApiSchema.annotations({ status: 502 })
) {}

export class ServiceUnavailable extends Schema.Class<ServiceUnavailable>("ServiceUnavailable")(
  errorFields,
  HttpApiSchema.annotations({ status: 503 })
) {}

export const notFound = (what: string, id: string) =>
  new NotFound({ error: "NOT_FOUND", message: `no ${what} with id "${id}"` })

/** Every error class an endpoint may fail with, for the HTTP layer to answer with its own status. */
export const ApiErrors = [
  BadRequest,
  Unauthorized,
  PolicyDenied,
  NotFound,
  Conflict,
  Unprocessable,
  TooManyRequests,
  BadGateway,
  ServiceUnavailable
] as const
export type ApiError = InstanceType<(typeof ApiErrors)[number]>
