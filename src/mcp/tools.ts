import { Data, Schema } from "effect"
import { HistoryQuery } from "../contract/verification.js"
import { ResourceDetail, SearchResponse } from "../domain/catalog.js"
import {
  DiscoveryQuery,
  DiscoveryResponse,
  DiscoverySearchQuery,
  DiscoverySearchResponse
} from "../domain/discovery.js"
import { ResourceMetrics } from "../domain/metrics.js"
import {
  type ObservationPage,
  ProbeResult,
  ResourceHealth,
  ResourceHistory,
  ValidateRequest
} from "../domain/observations.js"
import { PreflightAnswer, PreflightRequest } from "../domain/preflight.js"
import { ResourceSearchRequest } from "../domain/resources.js"
import { RouteDecision, RouteRequest } from "../domain/routes.js"

const ResourceIdInput = Schema.Struct({ id: Schema.String.pipe(Schema.minLength(1)) }).annotations({
  identifier: "ResourceIdInput",
  description: "A resource id as listed by search_resources"
})

const ResourceHistoryInput = Schema.Struct({ ...ResourceIdInput.fields, ...HistoryQuery.fields }).annotations({
  identifier: "ResourceHistoryInput",
  description: "A resource id and optionally the span, from and to as RFC 3339 date-times"
})

/** One call into the HTTP API; the tool's answer is that endpoint's body, unchanged. */
export interface ApiCall {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: unknown
}

type Fetch = (call: ApiCall) => Promise<unknown>

/** A tool's failure the client should read (an error answer, a purchase that failed): an `isError` result with its message. */
export class ToolFailure extends Data.TaggedError("ToolFailure")<{ readonly message: string }> {}

export interface Tool<I, O> {
  readonly name: string
  readonly description: string
  readonly input: Schema.Schema<I, any>
  readonly output: Schema.Schema<O, any>
  readonly run: (input: I, fetch: Fetch) => Promise<unknown>
}

const resourcePath = (id: string) => `/v1/resources/${encodeURIComponent(id)}`

const tool = <I, O>(t: Tool<I, O>) => t

/** The query string of a GET endpoint, from an input whose values are strings and numbers. */
const queryOf = (input: Record<string, string | number | undefined>) => {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(input)) if (value !== undefined) params.set(key, String(value))
  const text = params.toString()
  return text === "" ? "" : `?${text}`
}

/**
 * The tools mirror endpoints one to one: each input schema is the endpoint's request schema and
 * each run is a request to that endpoint, so MCP and HTTP cannot drift apart.
 */
export const TOOLS = [
  tool({
    name: "search_resources",
    description:
      "Search the catalog of machine-payable resources (POST /v1/search): text, capability, payment and quality filters; prices compare worst-case spend.",
    input: ResourceSearchRequest,
    output: SearchResponse,
    run: (input, fetch) => fetch({ method: "POST", path: "/v1/search", body: input })
  }),
  tool({
    name: "list_discovery_resources",
    description:
      "The listed catalog in the x402 v2 discovery shape (GET /x402/discovery/resources): stock PaymentRequirements per resource, verification evidence in metadata, paged by limit (default 100, at most 1000) and offset in resource-id order.",
    input: DiscoveryQuery,
    output: DiscoveryResponse,
    run: (input, fetch) => fetch({ method: "GET", path: `/x402/discovery/resources${queryOf(input)}` })
  }),
  tool({
    name: "search_discovery_resources",
    description:
      "Bazaar search in the x402 2.27 shape (GET /x402/discovery/search): the listed catalog ranked by the full-text index for query, filtered by type, network, scheme, payTo and extensions, in cursor pages (limit default 50, at most 200); partialResults is true while pagination.cursor leads to more.",
    input: DiscoverySearchQuery,
    output: DiscoverySearchResponse,
    run: (input, fetch) => fetch({ method: "GET", path: `/x402/discovery/search${queryOf(input)}` })
  }),
  tool({
    name: "get_resource",
    description:
      "One resource with its payment options, current metrics and recent status transitions (GET /v1/resources/{id}).",
    input: ResourceIdInput,
    output: ResourceDetail,
    run: ({ id }, fetch) => fetch({ method: "GET", path: resourcePath(id) })
  }),
  tool({
    name: "validate_endpoint",
    description:
      "Probe a catalog resource ({resourceId}) or any URL ({url, method?}) now and record the observation (POST /v1/validate).",
    input: ValidateRequest,
    output: ProbeResult,
    run: (input, fetch) => fetch({ method: "POST", path: "/v1/validate", body: input })
  }),
  tool({
    name: "route_resource",
    description:
      "Choose a provider for a capability under a buyer policy (POST /v1/routes): the selection, ranked fallbacks and a reason code for every rejection.",
    input: RouteRequest,
    output: RouteDecision,
    run: (input, fetch) => fetch({ method: "POST", path: "/v1/routes", body: input })
  }),
  tool({
    name: "preflight_payment",
    description:
      "Before paying: ALLOW, WARN or DENY for a payment about to be made (POST /v1/preflight), given the 402 challenge (paymentRequired, or the raw paymentRequiredHeader) or the chosen requirements, the url and an optional buyer policy; every reason with its code and the evidence behind it (payees the URL's and origin's probes observed, prices, status, quarantines, policy limits).",
    input: PreflightRequest,
    output: PreflightAnswer,
    run: (input, fetch) => fetch({ method: "POST", path: "/v1/preflight", body: input })
  }),
  tool({
    name: "get_resource_health",
    description:
      "Status, verification level, recent transitions and the latest observation of a resource (GET /v1/resources/{id} and its newest observation).",
    input: ResourceIdInput,
    output: ResourceHealth,
    run: async ({ id }, fetch) => {
      const detail = (await fetch({ method: "GET", path: resourcePath(id) })) as typeof ResourceDetail.Encoded
      const page = (await fetch({
        method: "GET",
        path: `${resourcePath(id)}/observations?limit=1`
      })) as typeof ObservationPage.Encoded
      return {
        resourceId: detail.resource.id,
        status: detail.resource.status,
        verificationLevel: detail.resource.verificationLevel,
        transitions: detail.transitions,
        latestObservation: page.observations[0] ?? null
      } satisfies typeof ResourceHealth.Encoded
    }
  }),
  tool({
    name: "get_resource_metrics",
    description: "ResourceMetrics computed from recorded observations (GET /v1/resources/{id}/metrics).",
    input: ResourceIdInput,
    output: ResourceMetrics,
    run: ({ id }, fetch) => fetch({ method: "GET", path: `${resourcePath(id)}/metrics` })
  }),
  tool({
    name: "get_resource_history",
    description:
      "A resource's probes hour by hour, oldest first (GET /v1/resources/{id}/history): counts, availability, payment interface success rate and latency per hour, for the hours starting in [from, to) (default: the last 24 h; at most probes.retentionDays days).",
    input: ResourceHistoryInput,
    output: ResourceHistory,
    run: ({ id, from, to }, fetch) =>
      fetch({ method: "GET", path: `${resourcePath(id)}/history${queryOf({ from, to })}` })
  })
] as const
