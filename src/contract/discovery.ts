import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import {
  DISCOVERY_MAX_LIMIT,
  DISCOVERY_SEARCH_MAX_LIMIT,
  DiscoveryResponse,
  DiscoverySearchQuery,
  DiscoverySearchResponse
} from "../domain/discovery.js"
import { InvalidRequest, RateLimited } from "../domain/errors.js"
import { allIssues, failsWith, queryInt } from "./parse.js"

/** The query string of `DiscoveryQuery`: numbers arrive as text; a bad one is INVALID_REQUEST naming it. */
const DiscoveryUrlParams = allIssues(
  Schema.Struct({
    type: Schema.optional(Schema.String),
    network: Schema.optional(Schema.String),
    scheme: Schema.optional(Schema.String),
    payTo: Schema.optional(Schema.String),
    limit: Schema.optional(queryInt({ minimum: 1, maximum: DISCOVERY_MAX_LIMIT })),
    offset: Schema.optional(queryInt({ minimum: 0 }))
  })
)

/** The query string of `DiscoverySearchQuery`, as the stock 2.27 bazaar client sends it. */
const DiscoverySearchUrlParams = allIssues(
  Schema.Struct({
    ...DiscoverySearchQuery.fields,
    limit: Schema.optional(queryInt({ minimum: 1, maximum: DISCOVERY_SEARCH_MAX_LIMIT }))
  })
)

/**
 * x402 v2 discovery (§8): a stock HTTPFacilitatorClient with base `<service>/x402`, extended with
 * the bazaar client, lists the catalog here. Open to anyone, like the rest of discovery.
 */
export class DiscoveryApi extends HttpApiGroup.make("discovery")
  .add(
    HttpApiEndpoint.get("resources", "/x402/discovery/resources")
      .setUrlParams(DiscoveryUrlParams)
      .addSuccess(DiscoveryResponse)
  )
  .add(
    HttpApiEndpoint.get("search", "/x402/discovery/search")
      .setUrlParams(DiscoverySearchUrlParams)
      .addSuccess(DiscoverySearchResponse)
      .pipe(failsWith(InvalidRequest, RateLimited))
  ) {}
