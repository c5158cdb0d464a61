import {
  ForeignOrigin,
  HeadersTooLarge,
  InternalError,
  InvalidRequest,
  MalformedBody,
  NestingTooDeep,
  PayloadTooLarge,
  ShuttingDown,
  StoreUnavailable,
  UnsupportedMediaType
} from "../domain/errors.js"

/**
 * What any request may meet, declared by the whole API: every body is checked before routing, any
 * request may meet a failing store, and any request but /health/* may arrive while the instance
 * drains for a shutdown; without API keys, one addressed to a foreign name or from a foreign page
 * is refused (http/openMode.ts). The x402 endpoints declare each of them again in their combined shape.
 */
export const API_WIDE_ERRORS = [
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
] as const
