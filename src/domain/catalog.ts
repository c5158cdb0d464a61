import { Schema } from "effect"
import { Curation } from "./curation.js"
import { EconomicEvidence } from "./evidence.js"
import { ResourceMetrics } from "./metrics.js"
import { StatusTransition } from "./observations.js"
import { NextCursor } from "./pagination.js"
import { ResourceRecord } from "./resources.js"

/** The catalog as discovery answers it: records, and records with the evidence attached. */
export const ResourceList = Schema.Struct({
  resources: Schema.Array(ResourceRecord),
  nextCursor: NextCursor
}).annotations({
  identifier: "ResourceList"
})

export const ResourceDetail = Schema.Struct({
  ...ResourceRecord.fields,
  metrics: ResourceMetrics,
  transitions: Schema.Array(StatusTransition),
  /** The newest payments about the resource, each pending, confirmed, rejected (with why) or failed. */
  economicEvidence: Schema.Array(EconomicEvidence),
  /** An operator quarantine in force and the newest listing change, each with its actor and reason. */
  curation: Curation
}).annotations({ identifier: "ResourceDetail" })
export type ResourceDetail = typeof ResourceDetail.Type

export const SearchHit = Schema.Struct({
  ...ResourceRecord.fields,
  metrics: ResourceMetrics,
  /** Text relevance of `query` (0 when no query was given); results are ordered by it, then id. */
  relevance: Schema.Number
}).annotations({ identifier: "SearchHit" })
export type SearchHit = typeof SearchHit.Type

export const SearchResponse = Schema.Struct({
  resources: Schema.Array(SearchHit),
  /** Hits on this page. */
  count: Schema.Int,
  nextCursor: NextCursor
}).annotations({ identifier: "SearchResponse" })
