import type { ResourceMetrics } from "../domain/metrics.js"
import type { ResourcePaymentOption, ResourceRecord, ResourceSearchRequest } from "../domain/resources.js"
import { worstCaseUsd } from "../domain/resources.js"
import { FIELD_WEIGHTS, matchesAsPrefix, PREFIX_SHARE, tokenize } from "../domain/searchText.js"

/**
 * The ranking rule, stated over records in memory. The store's search index computes the same
 * figure in SQL (`store/searchIndex.ts`); test/search.test.ts holds the two equal.
 *
 * Text relevance of `query` for one record: for each query term, the best field it appears in,
 * summed. A term that is a prefix of a word counts half, so "insp" still finds "inspect"; a term of
 * one or two characters counts only as a whole word (`matchesAsPrefix`).
 */
export const relevance = (record: ResourceRecord, query: string): number => {
  const fields = [
    { weight: FIELD_WEIGHTS.name, words: tokenize(record.resource.name) },
    // Tags rank as capabilities: the store indexes them among the capability words.
    {
      weight: FIELD_WEIGHTS.capability,
      words: [...record.resource.capabilities, ...(record.resource.tags ?? [])].flatMap(tokenize)
    },
    { weight: FIELD_WEIGHTS.description, words: tokenize(record.resource.description) }
  ]
  let score = 0
  for (const term of tokenize(query)) {
    let best = 0
    for (const { weight, words } of fields) {
      if (words.includes(term)) best = Math.max(best, weight)
      else if (matchesAsPrefix(term) && words.some((w) => w.startsWith(term)))
        best = Math.max(best, weight * PREFIX_SHARE)
    }
    score += best
  }
  return score
}

const optionMatches = (option: ResourcePaymentOption, request: ResourceSearchRequest) =>
  (request.scheme === undefined || option.scheme === request.scheme) &&
  (request.network === undefined || option.network === request.network) &&
  (request.asset === undefined || option.asset === request.asset) &&
  (request.maxPriceUsd === undefined || worstCaseUsd(option) <= request.maxPriceUsd)

const hasEvidence = (metrics: ResourceMetrics) => metrics.observationCount > 0

/** Quality filters need evidence: a resource never observed passes none of them. */
export const qualityMatches = (metrics: ResourceMetrics, request: ResourceSearchRequest) =>
  (request.minimumReliability === undefined ||
    (hasEvidence(metrics) && metrics.reliability >= request.minimumReliability)) &&
  (request.maximumP95LatencyMs === undefined ||
    (metrics.p95LatencyMs !== null && metrics.p95LatencyMs <= request.maximumP95LatencyMs))

export interface SearchCandidate {
  readonly record: ResourceRecord
  readonly metrics: ResourceMetrics
}

export interface ScoredCandidate extends SearchCandidate {
  readonly relevance: number
}

/** Whether a request filters on evidence, which the store's search cannot judge. */
export const filtersOnQuality = (request: ResourceSearchRequest) =>
  request.minimumReliability !== undefined || request.maximumP95LatencyMs !== undefined

/**
 * The whole search rule over records in memory: what the paged search (the store's index, then
 * `qualityMatches`) must answer page after page; test/search.test.ts holds them equal.
 *
 * Filters by every field of the request and orders by relevance, then id. Payment filters
 * (scheme, network, asset, price) must all hold on one and the same option, and price is
 * compared with worst-case spend (the ceiling of an `upto` option).
 */
export const search = (
  candidates: ReadonlyArray<SearchCandidate>,
  request: ResourceSearchRequest
): ReadonlyArray<ScoredCandidate> => {
  const query = request.query?.trim() ?? ""
  return candidates
    .filter(
      ({ record }) => request.capability === undefined || record.resource.capabilities.includes(request.capability)
    )
    .filter(({ record }) => record.paymentOptions.some((o) => optionMatches(o, request)))
    .filter(({ metrics }) => qualityMatches(metrics, request))
    .map((c) => ({ ...c, relevance: query === "" ? 0 : relevance(c.record, query) }))
    .filter((c) => query === "" || c.relevance > 0)
    .sort((a, b) => b.relevance - a.relevance || (a.record.resource.id < b.record.resource.id ? -1 : 1))
}
