import { Migrator } from "@effect/sql"
import catalog from "./0001_catalog.js"
import verification from "./0002_verification.js"
import settlement from "./0003_settlement.js"
import receipts from "./0004_receipts.js"
import evidenceListing from "./0005_evidence_listing.js"
import catalogIngestion from "./0006_catalog_ingestion.js"
import curation from "./0007_curation.js"
import catalogReads from "./0008_catalog_reads.js"
import scaleProbes from "./0009_scale_probes.js"
import rateLimits from "./0010_rate_limits.js"
import catalogLoad from "./0011_catalog_load.js"
import searchTerms from "./0012_search_terms.js"
import rollupsByResource from "./0014_rollups_by_resource.js"
import payeeEvidence from "./0015_payee_evidence.js"
import budgetWindow from "./0016_budget_window.js"
import trust from "./0020_trust.js"
import serviceMetadata from "./0030_service_metadata.js"
import mcpTools from "./0035_mcp_tools.js"
import eventsByTransaction from "./0036_events_by_transaction.js"
import preflightLookups from "./0037_preflight_lookups.js"

/**
 * Migrations are imported, not globbed from disk, so the compiled single binary carries them.
 * Numbers are reserved per capability: 0002 verification, 0003 settlement, 0004 receipts, 0005 evidence states and listing, 0006 catalog ingestion and 0007 curation, 0008 catalog reads: search index and catalog fingerprints, 0009 probing at scale, 0010 rate limits, 0011 the key of the last catalog load, 0012 search terms by field, 0014 rollups pruned by resource, 0015 payee evidence indexes, 0016 the budget window's covering index, 0020 the trust model (trusted entries, ingestion quotas, probe lanes), 0030 the bazaar's service metadata, 0035 the MCP tool of mcp resources, 0036 economic events by transaction, 0037 entries by origin for preflight; later changes take the next free number.
 */
const all = {
  "0001_catalog": catalog,
  "0002_verification": verification,
  "0003_settlement": settlement,
  "0004_receipts": receipts,
  "0005_evidence_listing": evidenceListing,
  "0006_catalog_ingestion": catalogIngestion,
  "0007_curation": curation,
  "0008_catalog_reads": catalogReads,
  "0009_scale_probes": scaleProbes,
  "0010_rate_limits": rateLimits,
  "0011_catalog_load": catalogLoad,
  "0012_search_terms": searchTerms,
  "0014_rollups_by_resource": rollupsByResource,
  "0015_payee_evidence": payeeEvidence,
  "0016_budget_window": budgetWindow,
  "0020_trust": trust,
  "0030_service_metadata": serviceMetadata,
  "0035_mcp_tools": mcpTools,
  "0036_events_by_transaction": eventsByTransaction,
  "0037_preflight_lookups": preflightLookups
}

export const migrations = Migrator.fromRecord(all)

/** How many migrations a fully migrated store has recorded. */
export const migrationCount = Object.keys(all).length
