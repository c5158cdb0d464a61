import { HttpApi, OpenApi } from "@effect/platform"
import { wire } from "../domain/errors.js"
import { API_WIDE_ERRORS } from "./apiErrors.js"

const [
  InvalidRequest,
  HeadersTooLarge,
  MalformedBody,
  NestingTooDeep,
  PayloadTooLarge,
  UnsupportedMediaType,
  InternalError,
  StoreUnavailable,
  ShuttingDown,
  ForeignOrigin
] = API_WIDE_ERRORS

import { CurationApi } from "./curation.js"
import { DiscoveryApi } from "./discovery.js"
import { HealthApi } from "./health.js"
import { PolicyApi } from "./policy.js"
import { PreflightApi } from "./preflight.js"
import { ReceiptsApi } from "./receipts.js"
import { RegistrationApi } from "./registration.js"
import { ResourcesApi } from "./resources.js"
import { VerificationApi } from "./verification.js"
import { X402Api } from "./x402.js"

/**
 * HttpApi declares its own decode error on every endpoint; this service never answers it (the
 * error middleware turns it into INVALID_REQUEST, which each endpoint declares), so the document
 * drops it instead of describing a body that is never sent.
 */
const withoutHttpApiDecodeError = (spec: Record<string, any>): Record<string, any> => {
  const decodeRef = "#/components/schemas/HttpApiDecodeError"
  const unused = new Set(["HttpApiDecodeError", "Issue", "PropertyKey"])
  for (const operations of Object.values<Record<string, any>>(spec.paths ?? {})) {
    for (const operation of Object.values<any>(operations)) {
      const responses: Record<string, any> = operation?.responses ?? {}
      for (const [status, response] of Object.entries<any>(responses)) {
        const schema = response?.content?.["application/json"]?.schema
        if (schema?.$ref === decodeRef) delete responses[status]
        else if (Array.isArray(schema?.anyOf)) {
          const rest = schema.anyOf.filter((s: any) => s.$ref !== decodeRef)
          response.content["application/json"].schema = rest.length === 1 ? rest[0] : { ...schema, anyOf: rest }
        }
      }
    }
  }
  const schemas: Record<string, unknown> = spec.components?.schemas ?? {}
  for (const name of unused) delete schemas[name]
  return spec
}

/**
 * Effect's `Schema.Int` is a safe integer: the server refuses 2^53 and beyond wherever one is
 * expected. Its shared `Int` schema says so, so a client generated from the document never
 * sends an integer the server refuses for its size.
 */
const withSafeIntegers = (spec: Record<string, any>): Record<string, any> => {
  const int = spec.components?.schemas?.Int
  if (int !== undefined) Object.assign(int, { minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })
  return spec
}

/**
 * Verify and settle answer every refusal in its combined x402 body (x402.ts), the API-wide ones
 * too, so the plain classes the whole API declares are never sent there: their operations list
 * only the combined schemas.
 */
const onlyX402Refusals = (spec: Record<string, any>): Record<string, any> => {
  const combined = /^#\/components\/schemas\/(Verify|Settle)Refusal/
  for (const path of ["/x402/verify", "/x402/settle"]) {
    const responses: Record<string, any> = spec.paths?.[path]?.post?.responses ?? {}
    for (const [status, response] of Object.entries<any>(responses)) {
      const schema = response?.content?.["application/json"]?.schema
      if (status.startsWith("2") || !Array.isArray(schema?.anyOf)) continue
      const kept = schema.anyOf.filter((s: any) => combined.test(s.$ref ?? ""))
      response.content["application/json"].schema = kept.length === 1 ? kept[0] : { ...schema, anyOf: kept }
    }
  }
  return spec
}

/** The whole contract; `/openapi.json` is derived from this, never written by hand. */
export class SextantApi extends HttpApi.make("sextant")
  .add(HealthApi)
  .add(ResourcesApi)
  .add(RegistrationApi)
  .add(CurationApi)
  .add(VerificationApi)
  .add(PolicyApi)
  .add(PreflightApi)
  .add(X402Api)
  .add(DiscoveryApi)
  .add(ReceiptsApi)
  // API_WIDE_ERRORS (apiErrors.ts says why each is there), one by one so the API's error type names each.
  .addError(wire(InvalidRequest))
  .addError(wire(HeadersTooLarge))
  .addError(wire(MalformedBody))
  .addError(wire(NestingTooDeep))
  .addError(wire(PayloadTooLarge))
  .addError(wire(UnsupportedMediaType))
  // Without API keys, a request addressed to a foreign name or from a foreign page (http/openMode.ts).
  .addError(wire(ForeignOrigin))
  .addError(wire(InternalError))
  .addError(wire(StoreUnavailable))
  .addError(wire(ShuttingDown))
  .annotate(OpenApi.Title, "Sextant")
  .annotate(OpenApi.Version, "0.1.0")
  .annotate(OpenApi.License, { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" })
  .annotate(OpenApi.Description, "Verification, routing, policy and settlement layer for x402 payments on Stellar.")
  .annotate(OpenApi.Transform, (spec) => onlyX402Refusals(withSafeIntegers(withoutHttpApiDecodeError(spec)))) {}
