import { declareDiscoveryExtension } from "@x402/extensions/bazaar"
import type { DiscoveryItem } from "../domain/discovery.js"
import type { ResourceEvidence } from "../domain/evidence.js"
import type { RecordedObservation } from "../domain/observations.js"
import type { ResourcePaymentOption, ResourceRecord } from "../domain/resources.js"
import type { PaymentRequirements } from "../domain/x402.js"

type Requirements = typeof PaymentRequirements.Type

/**
 * The timeout a requirement carries when it was not observed: what the bundled paywall and the
 * stock resource server use. Stellar's exact scheme has the facilitator sponsor fees, which the
 * stock client reads from `extra.areFeesSponsored`.
 */
const MAX_TIMEOUT_SECONDS = 60
const EXTRA = { areFeesSponsored: true } as const

/** A catalog option as stock PaymentRequirements; for `upto` the amount is the ceiling, as x402 states it. */
const fromOption = (o: ResourcePaymentOption): Requirements => ({
  scheme: o.scheme,
  network: o.network,
  amount: o.scheme === "upto" ? (o.maxAmount ?? o.amount) : o.amount,
  asset: o.asset,
  payTo: o.payTo,
  maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
  extra: EXTRA
})

/** The option a healthy probe recorded, as the resource itself asked it. */
const fromObservation = (o: RecordedObservation): Requirements | null =>
  o.scheme === null || o.network === null || o.asset === null || o.payTo === null || o.amount === null
    ? null
    : {
        scheme: o.scheme,
        network: o.network,
        amount: o.maxAmount ?? o.amount,
        asset: o.asset,
        payTo: o.payTo,
        maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
        extra: EXTRA
      }

/**
 * An MCP resource's tool where the x402 bazaar specification puts it: the bazaar extension's
 * `info.input` (`type: "mcp"`, `toolName`, `transport`, `inputSchema`, `example`) with its
 * schema, built by @x402/extensions itself. A stock bazaar client reads items' `extensions`, so it
 * tells the tools of one server apart; the tuple (resource URL, toolName) is the item's identity.
 */
const mcpExtensions = (record: ResourceRecord) => {
  const tool = record.resource.mcp
  if (tool === undefined) return {}
  return {
    extensions: declareDiscoveryExtension({
      toolName: tool.toolName,
      description: record.resource.description,
      transport: tool.transport,
      // The spec requires a schema; a tool that declared none takes any object.
      inputSchema: tool.inputSchema ?? { type: "object" },
      ...(tool.example !== undefined ? { example: tool.example } : {})
    })
  }
}

/**
 * One listed resource as an x402 discovery item (v2 §8.2). `accepts` is what the newest healthy
 * probe saw the resource ask, else the catalog's options; `lastUpdated` is the newest probe, else
 * the time of reading; `metadata` carries the evidence a client ranks by; an `mcp` item carries its
 * tool in the bazaar extension, and its fields at the top level too, as earlier Bazaar listings
 * carried them. No I/O.
 */
export const discoveryItem = (
  record: ResourceRecord,
  evidence: ResourceEvidence,
  observed: RecordedObservation | null,
  nowMs: number
): DiscoveryItem => {
  const seen = observed === null ? null : fromObservation(observed)
  const updatedMs = evidence.lastObservedAt === null ? nowMs : Date.parse(evidence.lastObservedAt)
  return {
    resource: record.resource.url,
    type: record.resource.type,
    x402Version: 2,
    accepts: seen !== null ? [seen] : record.paymentOptions.map(fromOption),
    lastUpdated: Math.floor(updatedMs / 1000),
    ...(record.resource.serviceName !== undefined ? { serviceName: record.resource.serviceName } : {}),
    ...(record.resource.tags !== undefined ? { tags: record.resource.tags } : {}),
    ...(record.resource.iconUrl !== undefined ? { iconUrl: record.resource.iconUrl } : {}),
    metadata: {
      resourceId: record.resource.id,
      name: record.resource.name,
      description: record.resource.description,
      provider: record.provider.name,
      status: evidence.status,
      verificationLevel: evidence.verificationLevel,
      reliability: evidence.metrics.reliability,
      p95LatencyMs: evidence.metrics.p95LatencyMs,
      confidence: evidence.metrics.confidence,
      lastVerified: evidence.metrics.lastVerified
    },
    ...(record.resource.mcp !== undefined ? record.resource.mcp : {}),
    ...mcpExtensions(record)
  }
}
