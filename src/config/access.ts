import { Schema } from "effect"
import { AgentPolicy } from "../domain/policy.js"
import { NonNegativeNumber, opt, PositiveInt } from "./fields.js"

/** The config sections that bound callers: fee and spend budgets, request rate limits, the receipt signer, API keys. */

export const BudgetsConfig = Schema.Struct({
  windowSeconds: opt(PositiveInt, 3600).annotations({ description: "Rolling window for the fee and spend budgets." }),
  feeCeilingStroops: opt(PositiveInt, 1_000_000).annotations({
    description: "Sponsored fee reserved per settlement, charged at this ceiling whatever the fee really is."
  }),
  globalFeeStroops: opt(PositiveInt, 100_000_000).annotations({
    description: "Sponsored fees across all principals per window; over it a settle is 429 `FEE_BUDGET_EXHAUSTED`."
  }),
  perPrincipalFeeStroops: opt(PositiveInt, 10_000_000).annotations({
    description: "Sponsored fees per principal per window."
  }),
  spendWindowUsd: opt(NonNegativeNumber, 10).annotations({
    description: "Worst-case spend per principal per window; over it a settle is 403 `WINDOW_LIMIT_EXCEEDED`."
  })
})
export type BudgetsConfig = typeof BudgetsConfig.Type

/** At most `requests` per `windowSeconds` for one principal; null switches the limit off. */
export const RateLimit = Schema.NullOr(Schema.Struct({ requests: PositiveInt, windowSeconds: PositiveInt }))
export type RateLimit = typeof RateLimit.Type

/**
 * Request rate limits per principal (the API key's principal, else the client address), per
 * endpoint group, counted in the store so instances sharing a Postgres database share them.
 */
export const LimitsConfig = Schema.Struct({
  validate: opt(RateLimit, { requests: 60, windowSeconds: 60 }).annotations({
    description:
      "At most `requests` calls of `POST /v1/validate` per principal per `windowSeconds` (each sends traffic to a third party); `null` switches the limit off. Over the limit: 429 `RATE_LIMITED` with `Retry-After`."
  }),
  register: opt(RateLimit, { requests: 10, windowSeconds: 60 }).annotations({
    description: "The same for `POST /v1/resources/register` (each call probes at most 20 routes)."
  }),
  receipts: opt(RateLimit, { requests: 300, windowSeconds: 60 }).annotations({
    description: "The same for `POST /v1/receipts` and `POST /v1/preflight/outcomes` together (each reads the ledger)."
  }),
  verify: opt(RateLimit, { requests: 1200, windowSeconds: 60 }).annotations({
    description: "The same for `POST /x402/verify`."
  }),
  settle: opt(RateLimit, { requests: 1200, windowSeconds: 60 }).annotations({
    description: "The same for `POST /x402/settle`."
  }),
  search: opt(RateLimit, { requests: 120, windowSeconds: 60 }).annotations({
    description:
      "The same for `POST /v1/search` and `GET /x402/discovery/search` together (the MCP tools `search_resources` and `search_discovery_resources` call them): each search reads the catalog's index."
  }),
  clientAddressHeader: opt(
    Schema.NullOr(
      Schema.String.pipe(Schema.pattern(/^[a-z0-9-]+$/, { message: () => "expected a lowercase header name" }))
    ),
    null
  ).annotations({
    description:
      "Behind a reverse proxy, the header it writes the client's address into; without it every client counts as the proxy. The entry `trustedProxyHops` from the right is used: a proxy appends the address it saw on the right, and what a client sends itself stays on the left. Set it only when your proxy always writes the header.",
    examples: ["x-forwarded-for"]
  }),
  trustedProxyHops: opt(PositiveInt, 1).annotations({
    description:
      "How many proxies you run in front of the service, each appending to `clientAddressHeader`; a header with fewer entries gives its left-most one."
  })
})
export type LimitsConfig = typeof LimitsConfig.Type

export const SignerConfig = Schema.Union(
  Schema.Struct({ ed25519KeyFile: Schema.String.pipe(Schema.minLength(1)) }),
  Schema.Struct({ hmacSecret: Schema.String.pipe(Schema.minLength(16)) })
)
export type SignerConfig = typeof SignerConfig.Type

export const ApiKeyEntry = Schema.Struct({
  principal: Schema.propertySignature(Schema.String.pipe(Schema.minLength(1))).annotations({
    description: "The name the key acts as: budgets, idempotency, settlements and curation are keyed on it."
  }),
  sha256: Schema.propertySignature(
    Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "expected lowercase hex SHA-256" }))
  ).annotations({
    description:
      "The key's SHA-256, lowercase hex (`sextant keys hash <api-key>`); keys themselves are never configured."
  }),
  policy: Schema.optional(AgentPolicy).annotations({
    description: "An AgentPolicy every settle by this principal must pass together with the request's `servicePolicy`."
  }),
  role: Schema.optional(Schema.Literal("operator", "buyer")).annotations({
    description:
      "`operator` may curate the catalog (quarantine, list, unlist, delete); `buyer` (the default when absent) may not."
  })
})
export type ApiKeyEntry = typeof ApiKeyEntry.Type
